package org.larder.bench;

import com.github.benmanes.caffeine.cache.Cache;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.larder.LarderCache;

/**
 * The scale the binding exists for: 10^7 entries of 16/64 bytes, where every
 * engine misses DRAM. Gets at 1 to maxThreads threads (larder copy-out and
 * view, Caffeine), and batches of 16 keys (larder's getAllInto, which uses
 * the engine's prefetching batch get, against a loop of 16 Caffeine gets),
 * with Caffeine's heap and GC cost printed beside; then the same breakdown
 * of a get as for the small matrix.
 */
final class BigSet {
    static final int BATCH = 16;

    private BigSet() {
    }

    /** 16 random keys per call through larder's batch get; counts keys. */
    private static final class LarderBatch implements Harness.Loop {
        private final LarderCache<byte[], byte[]> c;
        private final Workload w;
        private final Workload.Rng rng;
        private final byte[][] keys = new byte[BATCH][];
        private final byte[][] values;
        private final int[] lengths = new int[BATCH];
        int sink;

        LarderBatch(LarderCache<byte[], byte[]> c, Workload w, long seed) {
            this.c = c;
            this.w = w;
            this.rng = new Workload.Rng(seed);
            values = new byte[BATCH][w.valueBytes];
        }

        @Override
        public long run(long deadline) {
            long ops = 0;
            int acc = 0;
            do {
                for (int j = 0; j < 64; j++) {
                    for (int k = 0; k < BATCH; k++) {
                        keys[k] = w.keys[rng.pick(w.n)];
                    }
                    acc += c.getAllInto(keys, BATCH, values, lengths) + values[0][0];
                }
                ops += 64 * BATCH;
            } while (System.nanoTime() < deadline);
            sink += acc;
            return ops;
        }
    }

    /** The same 16 random keys per step, as 16 Caffeine gets; counts keys. */
    private static final class CaffeineLoop implements Harness.Loop {
        private final Cache<Workload.Key, byte[]> c;
        private final Workload w;
        private final Workload.Rng rng;
        private final Workload.Key[] keys = new Workload.Key[BATCH];
        int sink;

        CaffeineLoop(Cache<Workload.Key, byte[]> c, Workload w, long seed) {
            this.c = c;
            this.w = w;
            this.rng = new Workload.Rng(seed);
        }

        @Override
        public long run(long deadline) {
            long ops = 0;
            int acc = 0;
            do {
                for (int j = 0; j < 64; j++) {
                    for (int k = 0; k < BATCH; k++) {
                        keys[k] = w.keyObjects[rng.pick(w.n)];
                    }
                    for (int k = 0; k < BATCH; k++) {
                        acc += c.getIfPresent(keys[k])[0];
                    }
                }
                ops += 64 * BATCH;
            } while (System.nanoTime() < deadline);
            sink += acc;
            return ops;
        }
    }

    static void run(int entries, int rounds, int warmup, long millis, int maxThreads)
            throws Exception {
        long t0 = System.nanoTime();
        Workload w = new Workload(entries, Matrix.VALUE_BYTES);
        System.err.printf("bigset: %,d keys built in %.1f s%n", entries, (System.nanoTime() - t0) / 1e9);
        try (LarderCache<byte[], byte[]> cache = Engines.larder(Math.max(1L << 30,
                (long) entries * 200), entries); Harness h = new Harness(maxThreads)) {
            Engines.Larder copy = new Engines.Larder(cache, false);
            Engines.Larder view = new Engines.Larder(cache, true);
            Engines.CaffeineEngine caffeine = new Engines.CaffeineEngine(2L * entries);
            long heap0 = usedHeapAfterGc();
            long gc0 = Harness.gcCount();
            long gcMs0 = Harness.gcMillis();
            t0 = System.nanoTime();
            caffeine.load(w);
            double caffeineLoad = (System.nanoTime() - t0) / 1e9;
            long caffeineGcs = Harness.gcCount() - gc0;
            long caffeineGcMs = Harness.gcMillis() - gcMs0;
            long caffeineHeap = usedHeapAfterGc() - heap0;
            gc0 = Harness.gcCount();
            t0 = System.nanoTime();
            copy.load(w);
            double larderLoad = (System.nanoTime() - t0) / 1e9;
            long larderGcs = Harness.gcCount() - gc0;
            System.err.printf("bigset: loaded (Caffeine %.1f s, larder %.1f s)%n", caffeineLoad,
                    larderLoad);

            List<Engines.Engine> engines = new ArrayList<>();
            engines.add(copy);
            engines.add(view);
            engines.add(caffeine);
            Map<String, Harness.Cell> cells = new LinkedHashMap<>();
            for (int round = 0; round < warmup + rounds; round++) {
                for (int threads = 1; threads <= maxThreads; threads++) {
                    long seed = round * 7919L + threads;
                    for (Engines.Engine e : engines) {
                        e.settle();
                        Harness.Round r = h.round(threads, millis,
                                id -> e.worker(w, seed * 31 + id, Engines.READ_ONLY));
                        keep(cells, round >= warmup, e.name + " get|" + threads, r);
                    }
                    Harness.Round rb = h.round(threads, millis,
                            id -> new LarderBatch(cache, w, seed * 31 + id));
                    keep(cells, round >= warmup, "larder getAllInto(16)|" + threads, rb);
                    Harness.Round rc = h.round(threads, millis,
                            id -> new CaffeineLoop(caffeine.cache, w, seed * 31 + id));
                    keep(cells, round >= warmup, "Caffeine 16 x getIfPresent|" + threads, rc);
                }
                System.err.printf("bigset: round %d of %d done%n", round + 1, warmup + rounds);
            }
            System.out.printf("%n### %,d entries of 16/64 B (larder: 1 table of %d MiB of"
                    + " entries; Caffeine: on the heap); %d rounds x %d ms, interleaved%n%n",
                    entries, cache.memUsed() >> 20, rounds, millis);
            System.out.println("M keys/s, median (min-max); ratio to the Caffeine cell of the"
                    + " same kind and threads; the same per CPU-second of the whole JVM process"
                    + " (see Harness), which leaves out the time the threads waited for a core.");
            System.out.println();
            System.out.println("| what | threads | M keys/s | ratio | M keys/CPU-s | ratio (CPU)"
                    + " | B/key | GCs |");
            System.out.println("|---|---|---|---|---|---|---|---|");
            for (int threads = 1; threads <= maxThreads; threads++) {
                Harness.Cell base = cells.get("Caffeine get|" + threads);
                Harness.Cell baseBatch = cells.get("Caffeine 16 x getIfPresent|" + threads);
                for (String what : new String[] {"larder copy get", "larder view get",
                    "Caffeine get", "larder getAllInto(16)", "Caffeine 16 x getIfPresent"}) {
                    Harness.Cell c = cells.get(what + "|" + threads);
                    Harness.Cell ref = what.contains("16") ? baseBatch : base;
                    System.out.printf("| %s | %d | %s | %.2fx | %s | %.2fx | %.2f | %d |%n", what,
                            threads, c.mops(), c.median() / ref.median(), c.mops(true),
                            c.median(true) / ref.median(true), c.maxBytesPerOp(), c.gcs());
                }
            }
            System.out.println();
            System.out.printf("Caffeine's cost of holding them: %,d MiB of live heap after a full"
                    + " GC, %d GCs (%,d ms) while loading (%.1f s); larder: %,d MiB off-heap"
                    + " (used bytes), %d GCs while loading (%.1f s).%n", caffeineHeap >> 20,
                    caffeineGcs, caffeineGcMs, caffeineLoad, cache.memUsed() >> 20, larderGcs,
                    larderLoad);
            copy.settle();
            Crossing.run(w, cache, rounds);
        }
    }

    private static void keep(Map<String, Harness.Cell> cells, boolean measured, String key,
            Harness.Round r) {
        if (measured) {
            cells.computeIfAbsent(key, k -> new Harness.Cell()).add(r);
        }
    }

    static long usedHeapAfterGc() {
        System.gc();
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }
}
