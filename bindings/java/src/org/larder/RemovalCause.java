package org.larder;

/** Why an entry left the cache ({@code enum larder_cause} in larder.h). */
public enum RemovalCause {
    /** {@code remove} (with or without an expected value). */
    EXPLICIT,
    /** A write stored a new value for the key. */
    REPLACED,
    /** Its time to live ran out (also for an entry past its deadline at {@code clear()}). */
    EXPIRED,
    /** The eviction policy chose it to keep the cache within its capacity (Caffeine's SIZE). */
    EVICTED,
    /** {@code clear()}, of an entry live at the call (Caffeine's {@code invalidateAll}: EXPLICIT). */
    CLEARED;

    private static final RemovalCause[] BY_CODE = values();

    /**
     * Whether the cache removed the entry itself ({@link #EXPIRED},
     * {@link #EVICTED}) rather than a call on it; Caffeine's
     * {@code RemovalCause.wasEvicted()}.
     */
    public boolean wasEvicted() {
        return this == EXPIRED || this == EVICTED;
    }

    static RemovalCause of(int code) {
        return BY_CODE[code];
    }
}
