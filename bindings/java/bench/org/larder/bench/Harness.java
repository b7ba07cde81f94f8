package org.larder.bench;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.IntFunction;

/**
 * Runs measured rounds on a fixed pool of worker threads (kept for the whole
 * run, so per-thread state is created in the warm-up, not in a measured
 * round), and keeps the figures: operations per second summed over workers,
 * heap bytes allocated per operation (each worker's own
 * ThreadMXBean.getThreadAllocatedBytes), and garbage collections during the
 * round.
 */
final class Harness implements AutoCloseable {
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private final ExecutorService pool;
    final int maxThreads;

    Harness(int maxThreads) {
        this.maxThreads = maxThreads;
        pool = Executors.newFixedThreadPool(maxThreads);
        THREADS.setThreadAllocatedMemoryEnabled(true);
    }

    @Override
    public void close() {
        pool.shutdownNow();
    }

    static long allocatedBytes() {
        return THREADS.getThreadAllocatedBytes(Thread.currentThread().getId());
    }

    static long gcCount() {
        long n = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            n += Math.max(0, gc.getCollectionCount());
        }
        return n;
    }

    static long gcMillis() {
        long n = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            n += Math.max(0, gc.getCollectionTime());
        }
        return n;
    }

    /** One worker's measured loop. */
    interface Loop {
        /** Runs until deadline (System.nanoTime); returns the operations done. */
        long run(long deadline);
    }

    /** What a round measured. */
    static final class Round {
        final double opsPerSec;
        final double bytesPerOp;
        final long gcs;

        Round(double opsPerSec, double bytesPerOp, long gcs) {
            this.opsPerSec = opsPerSec;
            this.bytesPerOp = bytesPerOp;
            this.gcs = gcs;
        }
    }

    /**
     * Runs one round: threads workers, each with the loop its factory makes
     * on that worker's thread (outside the measured part), all started
     * together, for millis.
     */
    Round round(int threads, long millis, IntFunction<Loop> factory) throws Exception {
        CyclicBarrier start = new CyclicBarrier(threads);
        List<Future<long[]>> results = new ArrayList<>();
        long gc0 = gcCount();
        for (int t = 0; t < threads; t++) {
            int id = t;
            results.add(pool.submit(() -> {
                Loop loop = factory.apply(id);
                start.await();
                long deadline = System.nanoTime() + millis * 1_000_000L;
                long a0 = allocatedBytes();
                long t0 = System.nanoTime();
                long ops = loop.run(deadline);
                long t1 = System.nanoTime();
                long a1 = allocatedBytes();
                return new long[] {ops, t1 - t0, a1 - a0};
            }));
        }
        double rate = 0;
        long ops = 0;
        long bytes = 0;
        for (Future<long[]> f : results) {
            long[] r = f.get();
            rate += r[0] * 1e9 / r[1];
            ops += r[0];
            bytes += r[2];
        }
        return new Round(rate, (double) bytes / Math.max(1, ops), gcCount() - gc0);
    }

    /** Medians and ranges of a cell's rounds. */
    static final class Cell {
        final List<Round> rounds = new ArrayList<>();

        void add(Round r) {
            rounds.add(r);
        }

        double[] rates() {
            double[] v = new double[rounds.size()];
            for (int i = 0; i < v.length; i++) {
                v[i] = rounds.get(i).opsPerSec;
            }
            Arrays.sort(v);
            return v;
        }

        double median() {
            double[] v = rates();
            return v.length == 0 ? Double.NaN : v[v.length / 2];
        }

        /** "12.3 (11.9-12.8)" in millions per second. */
        String mops() {
            double[] v = rates();
            return String.format("%.1f (%.1f-%.1f)", median() / 1e6, v[0] / 1e6, v[v.length - 1] / 1e6);
        }

        double maxBytesPerOp() {
            double m = 0;
            for (Round r : rounds) {
                m = Math.max(m, r.bytesPerOp);
            }
            return m;
        }

        long gcs() {
            long n = 0;
            for (Round r : rounds) {
                n += r.gcs;
            }
            return n;
        }
    }

    /** Median of values, with min and max: "m (lo-hi)" to the given decimals. */
    static String median(double[] values, int decimals) {
        double[] v = values.clone();
        Arrays.sort(v);
        String f = "%." + decimals + "f";
        return String.format(f + " (" + f + "-" + f + ")", v[v.length / 2], v[0], v[v.length - 1]);
    }

    static double medianOf(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        return v[v.length / 2];
    }
}
