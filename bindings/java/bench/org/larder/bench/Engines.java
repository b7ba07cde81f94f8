package org.larder.bench;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.util.concurrent.ConcurrentHashMap;
import org.larder.CacheSerializers;
import org.larder.DirectValueConsumer;
import org.larder.LarderCache;
import org.larder.LarderCacheBuilder;

/**
 * The engines the benchmark compares, each as a factory of per-thread
 * workers. A worker's read touches the value's first byte (a copy-out read
 * has copied all of it; an on-heap read gets a reference), and returns it
 * so the loop keeps it; a write stores a value it was given.
 */
final class Engines {
    private Engines() {
    }

    /** A scenario's share of writes, in 1/65536ths of the operations. */
    static final int READ_ONLY = 0;
    static final int WRITE_ONLY = 65536;
    static final int MIX_9_1 = 6554;

    /**
     * One thread's worker. {@link #run} is the measured loop; every engine
     * has its own copy of it (the same code), so that each loop's calls go
     * to one engine only and the JIT can inline them: a shared loop would
     * see four engines and pay a megamorphic call on every operation.
     */
    abstract static class Worker implements Harness.Loop {
        static final int BATCH = 1024;
        final Workload.Rng rng;
        final int n;
        final int writes;
        final byte[] value;
        int sink;

        Worker(Workload w, long seed, int writes) {
            this.rng = new Workload.Rng(seed);
            this.n = w.n;
            this.writes = writes;
            this.value = w.value(0);
        }

        /** Reads key i; returns something of the value. */
        abstract int read(int i);

        /** Writes key i with value v. */
        abstract void write(int i, byte[] v);
    }

    abstract static class Engine implements AutoCloseable {
        final String name;

        Engine(String name) {
            this.name = name;
        }

        abstract void load(Workload w);

        /** A worker for the calling thread (allocates its buffers now). */
        abstract Worker worker(Workload w, long seed, int writes);

        /**
         * Lets the engine finish the work the previous round left (before a
         * round, outside its timing), so that one cell's backlog does not
         * land in the next one's measurement.
         */
        void settle() {
        }

        @Override
        public void close() {
        }
    }

    static LarderCache<byte[], byte[]> larder(long capacity, long entries) {
        return LarderCacheBuilder.<byte[], byte[]>newBuilder()
                .keySerializer(CacheSerializers.BYTE_ARRAY)
                .valueSerializer(CacheSerializers.BYTE_ARRAY)
                .capacity(capacity).expectedEntries(entries).build();
    }

    /** larder through the binding; the reads are copy-out (getInto) or views (getDirect). */
    static final class Larder extends Engine {
        final LarderCache<byte[], byte[]> cache;
        private final boolean view;

        Larder(LarderCache<byte[], byte[]> cache, boolean view) {
            super(view ? "larder view" : "larder copy");
            this.cache = cache;
            this.view = view;
        }

        @Override
        void load(Workload w) {
            for (int i = 0; i < w.n; i++) {
                cache.put(w.keys[i], w.value(i));
            }
        }

        @Override
        Worker worker(Workload w, long seed, int writes) {
            return view ? new ViewWorker(cache, w, seed, writes)
                    : new CopyWorker(cache, w, seed, writes);
        }

        /** Waits (up to 2 s) until the maintainer's pass count stops moving for 20 ms. */
        @Override
        void settle() {
            long deadline = System.nanoTime() + 2_000_000_000L;
            long last = -1;
            long passes;
            while ((passes = cache.stats().get("maintainer_passes")) != last
                    && System.nanoTime() < deadline) {
                last = passes;
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    private static final class CopyWorker extends Worker {
        private final LarderCache<byte[], byte[]> c;
        private final byte[][] keys;
        private final byte[] dst;

        CopyWorker(LarderCache<byte[], byte[]> c, Workload w, long seed, int writes) {
            super(w, seed, writes);
            this.c = c;
            this.keys = w.keys;
            this.dst = new byte[w.valueBytes];
        }

        @Override
        int read(int i) {
            return c.getInto(keys[i], dst) + dst[0];
        }

        @Override
        void write(int i, byte[] v) {
            c.put(keys[i], v);
        }

        @Override
        public long run(long deadline) {
            long ops = 0;
            int acc = 0;
            do {
                for (int j = 0; j < BATCH; j++) {
                    long r = rng.next();
                    int i = (int) (((r >>> 32) * n) >>> 32);
                    if ((r & 0xffff) >= writes) {
                        acc += read(i);
                    } else {
                        write(i, value);
                    }
                }
                ops += BATCH;
            } while (System.nanoTime() < deadline);
            sink += acc;
            return ops;
        }
    }

    private static final class ViewWorker extends Worker implements DirectValueConsumer {
        private final LarderCache<byte[], byte[]> c;
        private final byte[][] keys;
        private int got;

        ViewWorker(LarderCache<byte[], byte[]> c, Workload w, long seed, int writes) {
            super(w, seed, writes);
            this.c = c;
            this.keys = w.keys;
        }

        @Override
        public void accept(org.larder.ValueView v) {
            got = v.getByte(0);
        }

        @Override
        int read(int i) {
            c.getDirect(keys[i], this);
            return got;
        }

        @Override
        void write(int i, byte[] v) {
            c.put(keys[i], v);
        }

        @Override
        public long run(long deadline) {
            long ops = 0;
            int acc = 0;
            do {
                for (int j = 0; j < BATCH; j++) {
                    long r = rng.next();
                    int i = (int) (((r >>> 32) * n) >>> 32);
                    if ((r & 0xffff) >= writes) {
                        acc += read(i);
                    } else {
                        write(i, value);
                    }
                }
                ops += BATCH;
            } while (System.nanoTime() < deadline);
            sink += acc;
            return ops;
        }
    }

    /** Caffeine 2.6 (Debian), bounded by entries as a cache is, keys as prebuilt objects. */
    static final class CaffeineEngine extends Engine {
        final Cache<Workload.Key, byte[]> cache;

        CaffeineEngine(long maximumSize) {
            super("Caffeine");
            cache = Caffeine.newBuilder().maximumSize(maximumSize).build();
        }

        @Override
        void load(Workload w) {
            for (int i = 0; i < w.n; i++) {
                cache.put(w.keyObjects[i], w.value(i));
            }
        }

        @Override
        Worker worker(Workload w, long seed, int writes) {
            return new CaffeineWorker(cache, w, seed, writes);
        }

        /** Runs Caffeine's pending maintenance now. */
        @Override
        void settle() {
            cache.cleanUp();
        }
    }

    static final class MapEngine extends Engine {
        final ConcurrentHashMap<Workload.Key, byte[]> map;

        MapEngine(int entries) {
            super("ConcurrentHashMap");
            map = new ConcurrentHashMap<>(entries * 2);
        }

        @Override
        void load(Workload w) {
            for (int i = 0; i < w.n; i++) {
                map.put(w.keyObjects[i], w.value(i));
            }
        }

        @Override
        Worker worker(Workload w, long seed, int writes) {
            return new MapWorker(map, w, seed, writes);
        }
    }

    private static final class CaffeineWorker extends Worker {
        private final Cache<Workload.Key, byte[]> cache;
        private final Workload.Key[] keys;

        CaffeineWorker(Cache<Workload.Key, byte[]> cache, Workload w, long seed, int writes) {
            super(w, seed, writes);
            this.cache = cache;
            this.keys = w.keyObjects;
        }

        @Override
        int read(int i) {
            return cache.getIfPresent(keys[i])[0];
        }

        @Override
        void write(int i, byte[] v) {
            cache.put(keys[i], v);
        }

        @Override
        public long run(long deadline) {
            long ops = 0;
            int acc = 0;
            do {
                for (int j = 0; j < BATCH; j++) {
                    long r = rng.next();
                    int i = (int) (((r >>> 32) * n) >>> 32);
                    if ((r & 0xffff) >= writes) {
                        acc += read(i);
                    } else {
                        write(i, value);
                    }
                }
                ops += BATCH;
            } while (System.nanoTime() < deadline);
            sink += acc;
            return ops;
        }
    }

    private static final class MapWorker extends Worker {
        private final ConcurrentHashMap<Workload.Key, byte[]> map;
        private final Workload.Key[] keys;

        MapWorker(ConcurrentHashMap<Workload.Key, byte[]> map, Workload w, long seed, int writes) {
            super(w, seed, writes);
            this.map = map;
            this.keys = w.keyObjects;
        }

        @Override
        int read(int i) {
            return map.get(keys[i])[0];
        }

        @Override
        void write(int i, byte[] v) {
            map.put(keys[i], v);
        }

        @Override
        public long run(long deadline) {
            long ops = 0;
            int acc = 0;
            do {
                for (int j = 0; j < BATCH; j++) {
                    long r = rng.next();
                    int i = (int) (((r >>> 32) * n) >>> 32);
                    if ((r & 0xffff) >= writes) {
                        acc += read(i);
                    } else {
                        write(i, value);
                    }
                }
                ops += BATCH;
            } while (System.nanoTime() < deadline);
            sink += acc;
            return ops;
        }
    }
}
