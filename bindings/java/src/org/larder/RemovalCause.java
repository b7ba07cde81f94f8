package org.larder;

/** Why an entry left the cache ({@code enum larder_cause} in larder.h). */
public enum RemovalCause {
    /** {@code remove} (with or without an expected value). */
    EXPLICIT,
    /** A write stored a new value for the key. */
    REPLACED,
    /** Its time to live ran out (also for an entry past its deadline at {@code clear()}). */
    EXPIRED,
    /** The eviction policy chose it to keep the cache within its capacity. */
    EVICTED,
    /** {@code clear()}, of an entry live at the call (Caffeine's {@code invalidateAll}: EXPLICIT). */
    CLEARED;

    private static final RemovalCause[] BY_CODE = values();

    static RemovalCause of(int code) {
        return BY_CODE[code];
    }
}
