package org.larder.bench;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.io.IOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.larder.LarderCache;

/**
 * The reason the binding exists: a large cache in a JVM, with a 9:1 read and
 * write load, and what the garbage collector does meanwhile. One engine per
 * JVM (bench/run.sh starts one for larder and one for Caffeine, with the same
 * -Xmx and -Xlog:gc to a file): load the entries (16-byte keys, values of
 * valueBytes), collect once, then run the mix on every thread for the given
 * seconds. Each write stores a freshly allocated value, as an application
 * caching new data does (larder copies it off-heap and drops it; Caffeine
 * keeps it). Each read is timed alone (System.nanoTime around it, the same
 * overhead for both engines).
 *
 * <p>Prints one row of the table: heap used (after the load's collection,
 * and the highest seen while running, sampled every 100 ms), young and old
 * collections, total and worst pause (from the GC log's "Pause" lines), and
 * read latency p99, p99.9 and max.
 */
final class GcPause {
    private static final Pattern PAUSE = Pattern.compile(
            "^\\[([0-9.]+)s\\] GC\\(\\d+\\) (Pause .*) ([0-9.]+)ms$");

    private GcPause() {
    }

    /** Latency histogram: 16 linear sub-buckets per power of two of nanoseconds. */
    static final class Histogram {
        final long[] counts = new long[64 * 16];
        long max;

        void record(long ns) {
            long v = Math.max(1, ns);
            int exp = 63 - Long.numberOfLeadingZeros(v);
            int sub = exp < 4 ? (int) (v << (4 - exp)) & 15 : (int) (v >>> (exp - 4)) & 15;
            counts[exp * 16 + sub]++;
            max = Math.max(max, ns);
        }

        void add(Histogram o) {
            for (int i = 0; i < counts.length; i++) {
                counts[i] += o.counts[i];
            }
            max = Math.max(max, o.max);
        }

        /** The upper bound of the bucket holding quantile q. */
        long quantile(double q) {
            long total = 0;
            for (long c : counts) {
                total += c;
            }
            long want = (long) Math.ceil(q * total);
            long seen = 0;
            for (int i = 0; i < counts.length; i++) {
                seen += counts[i];
                if (seen >= want && counts[i] > 0) {
                    int exp = i / 16;
                    int sub = i % 16;
                    return exp < 4 ? (16L + sub + 1) >> (4 - exp) : (16L + sub + 1) << (exp - 4);
                }
            }
            return max;
        }
    }

    interface Store {
        byte[] get(int i);

        void put(int i, byte[] v);
    }

    static void run(String engine, int entries, int valueBytes, int seconds, int threads,
            String gcLog) throws Exception {
        Workload w = new Workload(entries, valueBytes);
        Store store;
        LarderCache<byte[], byte[]> larder = null;
        long t0 = System.nanoTime();
        if (engine.equals("larder")) {
            larder = Engines.larder((long) entries * (valueBytes + 100), entries);
            LarderCache<byte[], byte[]> c = larder;
            byte[] v = new byte[valueBytes];
            for (int i = 0; i < entries; i++) {
                c.put(w.keys[i], v);
            }
            ThreadLocal<byte[]> dst = ThreadLocal.withInitial(() -> new byte[valueBytes]);
            store = new Store() {
                @Override
                public byte[] get(int i) {
                    byte[] d = dst.get();
                    return c.getInto(w.keys[i], d) >= 0 ? d : null;
                }

                @Override
                public void put(int i, byte[] value) {
                    c.put(w.keys[i], value);
                }
            };
        } else {
            Cache<Workload.Key, byte[]> c = Caffeine.newBuilder().maximumSize(2L * entries).build();
            for (int i = 0; i < entries; i++) {
                c.put(w.keyObjects[i], new byte[valueBytes]);
            }
            store = new Store() {
                @Override
                public byte[] get(int i) {
                    return c.getIfPresent(w.keyObjects[i]);
                }

                @Override
                public void put(int i, byte[] value) {
                    c.put(w.keyObjects[i], value);
                }
            };
        }
        double load = (System.nanoTime() - t0) / 1e9;
        long heapAfterLoad = BigSet.usedHeapAfterGc();
        long[] gc0 = gcCounts();
        AtomicLong maxHeap = new AtomicLong();
        Thread sampler = new Thread(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                long used = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
                maxHeap.accumulateAndGet(used, Math::max);
                try {
                    Thread.sleep(100);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "heap-sampler");
        sampler.setDaemon(true);
        sampler.start();
        double runStart = ManagementFactory.getRuntimeMXBean().getUptime() / 1e3;
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        List<Thread> workers = new ArrayList<>();
        Histogram[] hists = new Histogram[threads];
        long[] ops = new long[threads];
        for (int t = 0; t < threads; t++) {
            int id = t;
            hists[t] = new Histogram();
            Thread th = new Thread(() -> {
                Workload.Rng rng = new Workload.Rng(77 + id);
                Histogram hist = hists[id];
                long n = 0;
                int sink = 0;
                while (System.nanoTime() < deadline) {
                    for (int j = 0; j < 1000; j++) {
                        long r = rng.next();
                        int i = (int) (((r >>> 32) * entries) >>> 32);
                        if ((r & 0xffff) < Engines.MIX_9_1) {
                            store.put(i, new byte[valueBytes]);
                        } else {
                            long a = System.nanoTime();
                            byte[] v = store.get(i);
                            hist.record(System.nanoTime() - a);
                            sink += v[0];
                        }
                    }
                    n += 1000;
                }
                ops[id] = n + (sink == 42 ? 1 : 0);
            });
            workers.add(th);
            th.start();
        }
        for (Thread th : workers) {
            th.join();
        }
        sampler.interrupt();
        long[] gc1 = gcCounts();
        Histogram all = new Histogram();
        long totalOps = 0;
        for (int t = 0; t < threads; t++) {
            all.add(hists[t]);
            totalOps += ops[t];
        }
        double[] pauses = pausesSince(gcLog, runStart);
        System.out.printf("| %s | %,d | %.1f s | %,d MiB | %,d MiB | %d | %.0f | %d | %.0f ms |"
                + " %.1f ms | %.2f | %s | %s | %s |%n", engine, entries, load,
                heapAfterLoad >> 20, maxHeap.get() >> 20, gc1[0] - gc0[0], pauses[2],
                gc1[1] - gc0[1], pauses[0], pauses[1], totalOps / 1e6 / seconds,
                us(all.quantile(0.99)), us(all.quantile(0.999)), us(all.max));
        if (larder != null) {
            larder.close();
        }
    }

    private static String us(long ns) {
        return ns < 10_000 ? String.format("%.2f us", ns / 1e3) : String.format("%.1f us", ns / 1e3);
    }

    /** Young and old (or full) collection counts, from the MXBeans. */
    private static long[] gcCounts() {
        long[] c = new long[2];
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            boolean young = gc.getName().contains("Young");
            c[young ? 0 : 1] += Math.max(0, gc.getCollectionCount());
        }
        return c;
    }

    /**
     * From the GC log (-Xlog:gc:file=...:uptime), the stop-the-world pauses
     * that began at or after JVM uptime `from` seconds: {total ms, worst ms,
     * concurrent cycles (Pause Remark lines)}.
     */
    private static double[] pausesSince(String gcLog, double from) throws IOException {
        double total = 0;
        double worst = 0;
        double remarks = 0;
        for (String line : Files.readAllLines(Paths.get(gcLog))) {
            Matcher m = PAUSE.matcher(line);
            if (m.find() && Double.parseDouble(m.group(1)) >= from) {
                double ms = Double.parseDouble(m.group(3));
                total += ms;
                worst = Math.max(worst, ms);
                remarks += m.group(2).startsWith("Pause Remark") ? 1 : 0;
            }
        }
        return new double[] {total, worst, remarks};
    }
}
