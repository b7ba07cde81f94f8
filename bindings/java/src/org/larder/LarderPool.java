package org.larder;

import java.lang.ref.Cleaner;

/**
 * One off-heap memory budget shared by several caches, in the manner of an
 * Ehcache cache manager's pooled resource: the pool sets each member cache's
 * capacity and moves capacity, in the background, to the cache where it
 * earns the most (extra hits per extra byte, weighted by each cache's
 * {@link LarderCacheBuilder#weight(double) weight}), within each cache's
 * {@link LarderCacheBuilder#minShare(double) minimum} and
 * {@link LarderCacheBuilder#maxShare(double) maximum share}. The caches'
 * used bytes together never exceed the budget plus
 * {@link PoolStats#overshootBound()} (budget / 100 plus 4 MiB per open
 * cache).
 *
 * <pre>{@code
 * try (LarderPool pool = LarderPool.builder().budget(1L << 30).build()) {
 *     LarderCache<String, byte[]> users = LarderCacheBuilder.<String, byte[]>newBuilder()
 *             .keySerializer(CacheSerializers.STRING)
 *             .valueSerializer(CacheSerializers.BYTE_ARRAY)
 *             .pool(pool).weight(10).minShare(0.2)
 *             .build();
 *     // ... other caches in the same pool ...
 *     users.close(); // every cache before its pool
 * }
 * }</pre>
 *
 * <p><b>Closing.</b> Close every cache of the pool first: {@link #close()}
 * throws {@link IllegalStateException}, changing nothing, while a cache is
 * open in it. Building a cache in a closed pool throws
 * {@link IllegalStateException}. A pool that becomes unreachable without
 * being closed is closed by a {@link Cleaner}; an open cache keeps its pool
 * reachable.
 *
 * <p><b>Threads.</b> Every method may be called from any thread. The pool
 * runs one native thread of its own (the controller).
 */
public final class LarderPool implements AutoCloseable {
    /** The smallest budget the engine accepts. */
    public static final long MIN_BUDGET = 1L << 20;

    private final Handle handle;
    private final Cleaner.Cleanable cleanable;

    private LarderPool(Builder b) {
        int[] out = new int[1];
        long address = Native.poolCreate(b.budget, b.intervalMillis, out);
        if (address == 0) {
            throw LarderCache.error(out[0]);
        }
        handle = new Handle(address);
        cleanable = LarderCache.CLEANER.register(this, handle);
    }

    /** A builder with the defaults: budget 256 MiB, controller interval 100 ms. */
    public static Builder builder() {
        Native.ensureLoaded();
        return new Builder();
    }

    /** Configures a {@link LarderPool}; each setter checks its argument at once. */
    public static final class Builder {
        long budget = 256L << 20;
        long intervalMillis = 100;

        private Builder() {
        }

        /** The bytes of entries all the pool's caches may hold together, >= {@link #MIN_BUDGET}. */
        public Builder budget(long bytes) {
            if (bytes < MIN_BUDGET) {
                throw new IllegalArgumentException("budget must be at least " + MIN_BUDGET
                        + " bytes: " + bytes);
            }
            budget = bytes;
            return this;
        }

        /**
         * How often the controller moves capacity, 1..60,000 ms (default
         * 100); 0 turns it off: each cache then holds an equal part of the
         * budget, clamped to its shares, recomputed when a cache opens or
         * closes.
         */
        public Builder controllerIntervalMillis(long millis) {
            if (millis < 0 || millis > 60_000) {
                throw new IllegalArgumentException("controllerIntervalMillis must be 0..60000: "
                        + millis);
            }
            intervalMillis = millis;
            return this;
        }

        /**
         * Creates the pool and starts its controller thread.
         *
         * @throws LarderException no memory or no thread for it
         */
        public LarderPool build() {
            return new LarderPool(this);
        }
    }

    /**
     * The pool-wide figures: budget, bound, caches, assigned and used bytes,
     * moves, controller passes and CPU time.
     *
     * @throws IllegalStateException the pool is closed
     */
    public PoolStats stats() {
        String[] names = Names.POOL;
        long[] v = new long[names.length];
        synchronized (handle) {
            checkOpen();
            int rc = Native.poolStats(handle.address, v);
            if (rc != Native.OK) {
                throw LarderCache.error(rc);
            }
        }
        return new PoolStats(names, v);
    }

    /**
     * Stops the controller and frees the pool. Closing twice is a no-op.
     *
     * @throws IllegalStateException a cache is still open in the pool (the
     *         pool stays open; close the caches first)
     */
    @Override
    public void close() {
        synchronized (handle) {
            if (handle.address == 0) {
                return;
            }
            int rc = Native.poolClose(handle.address);
            if (rc == Native.ESTATE) {
                long[] v = new long[Names.POOL.length];
                int open = Native.poolStats(handle.address, v) == Native.OK
                        ? (int) v[PoolStats.CACHES] : -1;
                throw new IllegalStateException("larder: the pool still has " + open
                        + " open cache(s): close every cache of a pool before the pool");
            }
            if (rc != Native.OK) {
                throw LarderCache.error(rc);
            }
            handle.address = 0;
        }
        cleanable.clean();
    }

    /** True once {@link #close()} has succeeded. */
    public boolean isClosed() {
        synchronized (handle) {
            return handle.address == 0;
        }
    }

    /* The lock a cache's open holds so that the pool cannot close meanwhile. */
    Object lock() {
        return handle;
    }

    /* The pool's address, under lock(); throws when closed. */
    long address() {
        checkOpen();
        return handle.address;
    }

    private void checkOpen() {
        if (handle.address == 0) {
            throw new IllegalStateException("larder: the pool is closed");
        }
    }

    /* The engine's figure names, read once (the library is loaded by then). */
    static final class Names {
        static final String[] POOL = Native.poolStatNames();
        static final String[] CACHE = Native.poolCacheStatNames();
    }

    /*
     * The native pool: the lock of every call on it (P1 in jni_pool.c), and
     * the Cleaner's action. Holds no reference to the LarderPool.
     */
    private static final class Handle implements Runnable {
        long address; /* 0 once closed; under this object's lock */

        Handle(long address) {
            this.address = address;
        }

        @Override
        public void run() {
            synchronized (this) {
                /* Unreachable pools have no open caches (each keeps its pool
                 * reachable), so this close succeeds. */
                if (address != 0 && Native.poolClose(address) == Native.OK) {
                    address = 0;
                }
            }
        }
    }
}
