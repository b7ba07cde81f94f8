package org.larder;

import java.lang.ref.Reference;

/**
 * A clock that only moves when told to: give it to
 * {@link LarderCacheBuilder#clock(ManualClock)} and a cache's expiry follows
 * this value (milliseconds on a monotonic scale) instead of the system's
 * monotonic clock. Meant for tests of expiry that must not depend on how
 * fast a machine runs; one clock may drive several caches.
 *
 * <p>Never goes backwards: {@link #set(long)} to an earlier time throws.
 * Thread-safe. The native cell behind it is freed once neither the clock nor
 * any cache built with it is reachable.
 */
public final class ManualClock {
    private final long cell;

    /** A clock that reads {@code startMillis} (>= 0) until moved. */
    public ManualClock(long startMillis) {
        if (startMillis < 0) {
            throw new IllegalArgumentException("startMillis must be >= 0: " + startMillis);
        }
        Native.ensureLoaded();
        long c = Native.clockCreate(startMillis);
        if (c == 0) {
            throw new LarderOutOfMemoryException("larder: no memory for a ManualClock");
        }
        cell = c;
        LarderCache.CLEANER.register(this, () -> Native.clockFree(c));
    }

    long cell() {
        return cell;
    }

    /** The clock's time in milliseconds. */
    public long millis() {
        try {
            return Native.clockGet(cell);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Moves the clock to {@code millis}; throws if that is in its past. */
    public void set(long millis) {
        try {
            if (millis < 0 || !Native.clockSet(cell, millis)) {
                throw new IllegalArgumentException("a ManualClock never goes backwards: "
                        + millis + " < " + Native.clockGet(cell));
            }
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Moves the clock forward by {@code millis} (>= 0) and returns the new
     * time; throws, moving nothing, when that would pass
     * {@code Long.MAX_VALUE} (checked and moved in one atomic step, so
     * concurrent advances never carry it past).
     */
    public long advance(long millis) {
        if (millis < 0) {
            throw new IllegalArgumentException("a ManualClock never goes backwards: " + millis);
        }
        try {
            long now = Native.clockAdvance(cell, millis);
            if (now < 0) {
                throw new IllegalArgumentException("a ManualClock stops at Long.MAX_VALUE ms");
            }
            return now;
        } finally {
            Reference.reachabilityFence(this);
        }
    }
}
