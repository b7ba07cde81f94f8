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
 * operations per CPU-second of the whole process, heap bytes allocated per
 * operation (each worker's own ThreadMXBean.getThreadAllocatedBytes), and
 * garbage collections during the round.
 *
 * <p>Why the second rate: on a machine whose cores other processes share,
 * a round's wall-clock rate mostly says how long its threads waited for a
 * core (the same engine's rounds spread 2-7x there), while the CPU time the
 * process spent per operation does not count that wait. It is the whole
 * process's CPU time (CLOCK_PROCESS_CPUTIME_ID), so work an engine does off
 * the caller's thread is counted too: larder's maintainer, Caffeine's
 * maintenance on the common pool, the garbage collector, the JIT.
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
        /** Operations per second of the process's CPU time (all its threads). */
        final double opsPerCpuSec;
        final double bytesPerOp;
        final long gcs;

        Round(double opsPerSec, double opsPerCpuSec, double bytesPerOp, long gcs) {
            this.opsPerSec = opsPerSec;
            this.opsPerCpuSec = opsPerCpuSec;
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
        long cpu0 = BenchNative.processCpuNanos();
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
        long cpu = BenchNative.processCpuNanos() - cpu0;
        return new Round(rate, ops * 1e9 / Math.max(1, cpu), (double) bytes / Math.max(1, ops),
                gcCount() - gc0);
    }

    /** Medians and ranges of a cell's rounds. */
    static final class Cell {
        final List<Round> rounds = new ArrayList<>();

        void add(Round r) {
            rounds.add(r);
        }

        double[] rates(boolean cpu) {
            double[] v = new double[rounds.size()];
            for (int i = 0; i < v.length; i++) {
                v[i] = cpu ? rounds.get(i).opsPerCpuSec : rounds.get(i).opsPerSec;
            }
            Arrays.sort(v);
            return v;
        }

        /** The median wall-clock rate. */
        double median() {
            return median(false);
        }

        /** The median rate, per CPU-second when cpu, else per second. */
        double median(boolean cpu) {
            double[] v = rates(cpu);
            return v.length == 0 ? Double.NaN : v[v.length / 2];
        }

        /** "12.3 (11.9-12.8)" in millions per second. */
        String mops() {
            return mops(false);
        }

        /** "12.3 (11.9-12.8)" in millions per second, or per CPU-second when cpu. */
        String mops(boolean cpu) {
            double[] v = rates(cpu);
            return String.format("%.1f (%.1f-%.1f)", median(cpu) / 1e6, v[0] / 1e6,
                    v[v.length - 1] / 1e6);
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
