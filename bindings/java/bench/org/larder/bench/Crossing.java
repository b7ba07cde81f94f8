package org.larder.bench;

import org.larder.DirectValueConsumer;
import org.larder.LarderCache;
import org.larder.ValueView;

/**
 * Where one get's nanoseconds go, on one thread, in this JVM: each
 * component is timed over the same number of uniformly random keys of the
 * same workload, in rounds interleaved, and the loops' own key choice
 * (timed alone, in Java and in C) is subtracted.
 */
final class Crossing {
    private static final int CALLS = 5_000_000;

    private Crossing() {
    }

    /** A consumer that reads the first byte, kept for every call. */
    private static final class FirstByte implements DirectValueConsumer {
        int got;

        @Override
        public void accept(ValueView v) {
            got += v.getByte(0);
        }
    }

    private static double javaPick(Workload w, long seed) {
        Workload.Rng rng = new Workload.Rng(seed);
        long acc = 0;
        long t0 = System.nanoTime();
        for (int i = 0; i < CALLS; i++) {
            acc += w.keys[rng.pick(w.n)].length;
        }
        long t = System.nanoTime() - t0;
        return acc == 42 ? 0 : (double) t / CALLS;
    }

    private static double bindingCopy(Workload w, LarderCache<byte[], byte[]> c, long seed) {
        Workload.Rng rng = new Workload.Rng(seed);
        byte[] dst = new byte[w.valueBytes];
        long acc = 0;
        long t0 = System.nanoTime();
        for (int i = 0; i < CALLS; i++) {
            acc += c.getInto(w.keys[rng.pick(w.n)], dst);
        }
        long t = System.nanoTime() - t0;
        return acc != (long) CALLS * w.valueBytes ? Double.NaN : (double) t / CALLS;
    }

    private static double bindingView(Workload w, LarderCache<byte[], byte[]> c, long seed) {
        Workload.Rng rng = new Workload.Rng(seed);
        FirstByte consumer = new FirstByte();
        long found = 0;
        long t0 = System.nanoTime();
        for (int i = 0; i < CALLS; i++) {
            found += c.getDirect(w.keys[rng.pick(w.n)], consumer) ? 1 : 0;
        }
        long t = System.nanoTime() - t0;
        return found != CALLS ? Double.NaN : (double) t / CALLS;
    }

    private static double noop(Workload w, long seed) {
        Workload.Rng rng = new Workload.Rng(seed);
        long acc = 0;
        long t0 = System.nanoTime();
        for (int i = 0; i < CALLS; i++) {
            acc += BenchNative.noop(0x1000, 1, 0x2000, 0x2008, w.keys[rng.pick(w.n)].length,
                    0x3000, 4080);
        }
        long t = System.nanoTime() - t0;
        return acc == 42 ? 0 : (double) t / CALLS;
    }

    /** Runs the comparison and prints its table. */
    static void run(Workload w, LarderCache<byte[], byte[]> cache, int rounds) {
        long own = BenchNative.open(Math.max(1L << 30, (long) w.n * 256), w.n);
        if (own == 0 || BenchNative.load(own, w.packedKeys, Workload.KEY_BYTES, w.n,
                w.valueBytes) != 0) {
            throw new IllegalStateException("could not open and load the C loop's cache");
        }
        String[] names = {
            "binding get, copy-out (getInto)", "binding get, view (getDirect)",
            "crossing alone: empty native method, same 7 arguments",
            "larder_get in a C loop (own cache, same keys)",
            "  of which the key's hash (seeded XXH3-64, 16 B)",
            "binding's close guard: enter + exit",
            "crossing + Java side = copy-out get - C get"};
        int warm = 2;
        double[][] v = new double[names.length][rounds];
        for (int r = 0; r < warm + rounds; r++) {
            long seed = 1000 + r;
            double jpick = javaPick(w, seed);
            double cpick = (double) BenchNative.pickLoop(w.n, CALLS) / CALLS;
            double copy = bindingCopy(w, cache, seed) - jpick;
            double view = bindingView(w, cache, seed) - jpick;
            double cross = noop(w, seed) - jpick;
            double cget = (double) BenchNative.getLoop(own, w.packedKeys, Workload.KEY_BYTES, w.n,
                    CALLS, seed) / CALLS - cpick;
            double hash = (double) BenchNative.hashLoop(w.packedKeys, Workload.KEY_BYTES, w.n,
                    CALLS) / CALLS - cpick;
            double guard = (double) BenchNative.guardLoop(CALLS) / CALLS;
            if (r >= warm) {
                double[] row = {copy, view, cross, cget, hash, guard, copy - cget};
                for (int i = 0; i < row.length; i++) {
                    v[i][r - warm] = row[i];
                }
            }
        }
        BenchNative.close(own);
        System.out.printf("%n### Where a get's nanoseconds go: %,d entries, one thread, %d rounds"
                + " of %,d gets, interleaved%n%n", w.n, rounds, CALLS);
        System.out.println("ns per get, median (min-max); the key choice of each loop is subtracted.");
        System.out.println();
        System.out.println("| component | ns |");
        System.out.println("|---|---|");
        for (int i = 0; i < names.length; i++) {
            System.out.printf("| %s | %s |%n", names[i], Harness.median(v[i], 1));
        }
    }
}
