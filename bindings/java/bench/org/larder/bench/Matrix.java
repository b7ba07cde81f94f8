package org.larder.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.larder.LarderCache;

/**
 * The standard matrix (docs/benchmarking.md, from the RED OHC announcement) inside
 * one JVM: 16-byte keys, 64-byte values, 24,000 entries loaded before
 * timing, uniform keys, 1 GiB capacity; read, write and a 9:1 mix at 1 to
 * maxThreads threads; larder copy-out and view, Caffeine and
 * ConcurrentHashMap, rounds interleaved (every engine and cell once per
 * round), warm-up rounds discarded, medians with min-max.
 *
 * <p>Then where a get's nanoseconds go, on one thread, in the same JVM and
 * rounds interleaved: the binding's get, the crossing alone (an empty native
 * method with the same arguments), the engine's get in a C loop, the guard's
 * section and the hash.
 */
final class Matrix {
    static final int ENTRIES = 24_000;
    static final int VALUE_BYTES = 64;
    private static final String[] SCENARIOS = {"read", "write", "9:1 mix"};
    private static final int[] WRITES = {Engines.READ_ONLY, Engines.WRITE_ONLY, Engines.MIX_9_1};

    private Matrix() {
    }

    static void run(int rounds, int warmup, long millis, int maxThreads) throws Exception {
        Workload w = new Workload(ENTRIES, VALUE_BYTES);
        try (LarderCache<byte[], byte[]> cache = Engines.larder(1L << 30, ENTRIES);
                Harness h = new Harness(maxThreads)) {
            List<Engines.Engine> engines = new ArrayList<>();
            engines.add(new Engines.Larder(cache, false));
            engines.add(new Engines.Larder(cache, true));
            engines.add(new Engines.CaffeineEngine(2L * ENTRIES));
            engines.add(new Engines.MapEngine(ENTRIES));
            for (Engines.Engine e : engines) {
                if (!e.name.equals("larder view")) { // shares the copy engine's cache
                    e.load(w);
                }
            }
            Map<String, Harness.Cell> cells = new LinkedHashMap<>();
            for (int round = 0; round < warmup + rounds; round++) {
                for (int s = 0; s < SCENARIOS.length; s++) {
                    for (int threads = 1; threads <= maxThreads; threads++) {
                        for (Engines.Engine e : engines) {
                            long seed = round * 7919L + s * 131 + threads;
                            int writes = WRITES[s];
                            e.settle();
                            Harness.Round r = h.round(threads, millis,
                                    id -> e.worker(w, seed * 31 + id, writes));
                            if (round >= warmup) {
                                cells.computeIfAbsent(e.name + "|" + s + "|" + threads,
                                        k -> new Harness.Cell()).add(r);
                            }
                        }
                    }
                }
                System.err.printf("matrix: round %d of %d done%n", round + 1, warmup + rounds);
            }
            print(cells, engines, maxThreads, rounds, millis);
            engines.get(0).settle();
            Crossing.run(w, cache, rounds);
        }
    }

    private static void print(Map<String, Harness.Cell> cells, List<Engines.Engine> engines,
            int maxThreads, int rounds, long millis) {
        System.out.printf("%n### Standard matrix: 16 B keys, 64 B values, %,d entries, 1 GiB,"
                + " uniform keys; %d rounds x %d ms after warm-up, interleaved%n%n", ENTRIES,
                rounds, millis);
        System.out.println("M ops/s, median (min-max); ratio = median / Caffeine's median;"
                + " B/op = heap bytes allocated per operation (worst round); GCs = collections"
                + " during that engine's measured rounds.");
        System.out.println();
        rates(cells, engines, maxThreads, false);
        System.out.println();
        System.out.println("The same rounds per CPU-second: M ops per second of the whole JVM"
                + " process's CPU time (every thread: workers, larder's maintainer, Caffeine's"
                + " maintenance, GC, JIT), median (min-max); without the time the threads"
                + " waited for a core, which the wall-clock rates above include.");
        System.out.println();
        rates(cells, engines, maxThreads, true);
        System.out.println();
        System.out.println("| engine | B/op read | B/op write | B/op 9:1 | GCs in measured rounds |");
        System.out.println("|---|---|---|---|---|");
        for (Engines.Engine e : engines) {
            StringBuilder row = new StringBuilder("| " + e.name + " |");
            long gcs = 0;
            for (int s = 0; s < SCENARIOS.length; s++) {
                double worst = 0;
                for (int threads = 1; threads <= maxThreads; threads++) {
                    Harness.Cell c = cells.get(e.name + "|" + s + "|" + threads);
                    worst = Math.max(worst, c.maxBytesPerOp());
                    gcs += c.gcs();
                }
                row.append(String.format(" %.2f |", worst));
            }
            row.append(' ').append(gcs).append(" |");
            System.out.println(row);
        }
    }

    /** One table of the cells' rates, per second or per CPU-second, with ratios to Caffeine. */
    private static void rates(Map<String, Harness.Cell> cells, List<Engines.Engine> engines,
            int maxThreads, boolean cpu) {
        StringBuilder head = new StringBuilder("| scenario, threads |");
        StringBuilder sep = new StringBuilder("|---|");
        for (Engines.Engine e : engines) {
            head.append(' ').append(e.name).append(" |");
            sep.append("---|");
        }
        head.append(" copy / Caffeine | view / Caffeine |");
        sep.append("---|---|");
        System.out.println(head);
        System.out.println(sep);
        for (int s = 0; s < SCENARIOS.length; s++) {
            for (int threads = 1; threads <= maxThreads; threads++) {
                StringBuilder row = new StringBuilder("| " + SCENARIOS[s] + ", " + threads + " |");
                for (Engines.Engine e : engines) {
                    row.append(' ').append(cells.get(e.name + "|" + s + "|" + threads).mops(cpu))
                            .append(" |");
                }
                double caffeine = cells.get("Caffeine|" + s + "|" + threads).median(cpu);
                for (String mine : new String[] {"larder copy", "larder view"}) {
                    row.append(String.format(" %.2fx |",
                            cells.get(mine + "|" + s + "|" + threads).median(cpu) / caffeine));
                }
                System.out.println(row);
            }
        }
    }
}
