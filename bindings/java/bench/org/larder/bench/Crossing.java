package org.larder.bench;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.larder.DirectValueConsumer;
import org.larder.LarderCache;
import org.larder.ValueView;

/**
 * Where one get's nanoseconds go, on one thread, in this JVM: each
 * component is timed over the same number of uniformly random keys of the
 * same workload, in rounds interleaved, and the loops' own key choice
 * (timed alone, in Java and in C) is subtracted. The layers between the C
 * loop and the binding's get add one piece of the real get path each: a
 * fence after every get, then one JNI call per get (no binding), then the
 * copy into a byte[], then the binding (per-thread scratch, guard). The
 * copy is also timed without the get (alone, and after an empty native
 * method), so that its own cost can be told from the get's misses.
 */
final class Crossing {
    private static final int CALLS = 2_000_000;
    private static final VarHandle LONGS =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.nativeOrder());

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private Crossing() {
    }

    /*
     * The thread's CPU time: the loops are timed in it (and the C loops in
     * CLOCK_THREAD_CPUTIME_ID), so that time spent waiting for a core on a
     * loaded machine is not counted as the get's.
     */
    private static long cpuNanos() {
        return THREADS.getCurrentThreadCpuTime();
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
        long t0 = cpuNanos();
        for (int i = 0; i < CALLS; i++) {
            acc += w.keys[rng.pick(w.n)].length;
        }
        long t = cpuNanos() - t0;
        return acc == 42 ? 0 : (double) t / CALLS;
    }

    private static double bindingCopy(Workload w, LarderCache<byte[], byte[]> c, long seed) {
        Workload.Rng rng = new Workload.Rng(seed);
        byte[] dst = new byte[w.valueBytes];
        long acc = 0;
        long t0 = cpuNanos();
        for (int i = 0; i < CALLS; i++) {
            acc += c.getInto(w.keys[rng.pick(w.n)], dst);
        }
        long t = cpuNanos() - t0;
        return acc != (long) CALLS * w.valueBytes ? Double.NaN : (double) t / CALLS;
    }

    private static double bindingView(Workload w, LarderCache<byte[], byte[]> c, long seed) {
        Workload.Rng rng = new Workload.Rng(seed);
        FirstByte consumer = new FirstByte();
        long found = 0;
        long t0 = cpuNanos();
        for (int i = 0; i < CALLS; i++) {
            found += c.getDirect(w.keys[rng.pick(w.n)], consumer) ? 1 : 0;
        }
        long t = cpuNanos() - t0;
        return found != CALLS ? Double.NaN : (double) t / CALLS;
    }

    /*
     * The binding's get path rebuilt a layer at a time, without the binding:
     * the key read as two longs, one JNI call into larder_get on the C
     * loop's cache (no guard, no per-thread scratch), the value left in a
     * direct buffer; with copyOut, also copied into a byte[] as getInto
     * does.
     */
    private static double oneGet(Workload w, long own, ByteBuffer out, boolean copyOut,
            long seed) {
        Workload.Rng rng = new Workload.Rng(seed);
        long address = BenchNative.address(out);
        ByteBuffer longs = out.duplicate().order(ByteOrder.nativeOrder());
        byte[] dst = new byte[w.valueBytes];
        long acc = 0;
        int sink = 0;
        long t0 = cpuNanos();
        for (int i = 0; i < CALLS; i++) {
            byte[] key = w.keys[rng.pick(w.n)];
            long len = BenchNative.getOne(own, (long) LONGS.get(key, 0), (long) LONGS.get(key, 8),
                    address, out.capacity());
            if (copyOut) {
                for (int j = 0; j + 8 <= len; j += 8) {
                    LONGS.set(dst, j, longs.getLong(j));
                }
                sink += dst[0];
            }
            acc += len;
        }
        long t = cpuNanos() - t0;
        return acc != (long) CALLS * w.valueBytes || sink == 42 ? Double.NaN : (double) t / CALLS;
    }

    /*
     * One JNI call per get that lands the value in the byte[] itself, the
     * other ways than a direct buffer and a Java copy: SetByteArrayRegion
     * from a stack buffer (critical false), or the engine's get straight into
     * the array under GetPrimitiveArrayCritical (critical true).
     */
    private static double oneGetIntoArray(Workload w, long own, boolean critical, long seed) {
        Workload.Rng rng = new Workload.Rng(seed);
        byte[] dst = new byte[w.valueBytes];
        long acc = 0;
        int sink = 0;
        long t0 = cpuNanos();
        for (int i = 0; i < CALLS; i++) {
            byte[] key = w.keys[rng.pick(w.n)];
            long k0 = (long) LONGS.get(key, 0);
            long k1 = (long) LONGS.get(key, 8);
            acc += critical ? BenchNative.getOneCritical(own, k0, k1, dst)
                    : BenchNative.getOneRegion(own, k0, k1, dst);
            sink += dst[0];
        }
        long t = cpuNanos() - t0;
        return acc != (long) CALLS * w.valueBytes || sink == 42 ? Double.NaN : (double) t / CALLS;
    }

    /*
     * The copy of getInto alone: a value's bytes from a direct buffer into a
     * byte[], as Scratch.copyOut does, with no get; after an empty native
     * method when crossing, else in a plain Java loop. The buffer holds what
     * the engine left there, so the source is in cache, as after a get.
     */
    private static double copyAlone(Workload w, ByteBuffer out, boolean crossing, long seed) {
        Workload.Rng rng = new Workload.Rng(seed);
        ByteBuffer longs = out.duplicate().order(ByteOrder.nativeOrder());
        byte[] dst = new byte[w.valueBytes];
        int len = w.valueBytes;
        long acc = 0;
        int sink = 0;
        long t0 = cpuNanos();
        for (int i = 0; i < CALLS; i++) {
            int keyLen = w.keys[rng.pick(w.n)].length;
            acc += crossing ? BenchNative.noop(0x1000, 1, 0x2000, 0x2008, keyLen, 0x3000, 4080)
                    : keyLen;
            for (int j = 0; j + 8 <= len; j += 8) {
                LONGS.set(dst, j, longs.getLong(j));
            }
            sink += dst[0];
        }
        long t = cpuNanos() - t0;
        return acc == 42 || sink == 42 ? 0 : (double) t / CALLS;
    }

    private static double noop(Workload w, long seed) {
        Workload.Rng rng = new Workload.Rng(seed);
        long acc = 0;
        long t0 = cpuNanos();
        for (int i = 0; i < CALLS; i++) {
            acc += BenchNative.noop(0x1000, 1, 0x2000, 0x2008, w.keys[rng.pick(w.n)].length,
                    0x3000, 4080);
        }
        long t = cpuNanos() - t0;
        return acc == 42 ? 0 : (double) t / CALLS;
    }

    /*
     * The binding cache's guard address (LarderCache's private field), so
     * that the C loop and the bare JNI get can run on that very cache; the
     * bench is on the class path, where reflection may open the field.
     */
    private static long guardOf(LarderCache<byte[], byte[]> cache) {
        try {
            java.lang.reflect.Field f = LarderCache.class.getDeclaredField("guard");
            f.setAccessible(true);
            return f.getLong(cache);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot read LarderCache.guard", e);
        }
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
            "larder_get in a C loop, a full fence after each get",
            "one JNI call per get: crossing + larder_get (own cache), no binding",
            "the same + the value copied out to a byte[] in Java",
            "one JNI call per get, SetByteArrayRegion into the byte[] instead",
            "one JNI call per get, into the byte[] under GetPrimitiveArrayCritical instead",
            "the 64 B copy alone (direct buffer to byte[], no get, no crossing)",
            "empty native method + the 64 B copy, no get",
            "larder_get in a C loop on the binding's cache (same keys)",
            "one JNI call per get + the copy, on the binding's cache, no binding",
            "binding's close guard: enter + exit",
            "crossing + Java side = copy-out get - C get"};
        long engine = BenchNative.bindingEngine(guardOf(cache));
        ByteBuffer out = ByteBuffer.allocateDirect(4096);
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
            double fenced = (double) BenchNative.getLoopFenced(own, w.packedKeys,
                    Workload.KEY_BYTES, w.n, CALLS, seed) / CALLS - cpick;
            double one = oneGet(w, own, out, false, seed) - jpick;
            double oneCopy = oneGet(w, own, out, true, seed) - jpick;
            double region = oneGetIntoArray(w, own, false, seed) - jpick;
            double critical = oneGetIntoArray(w, own, true, seed) - jpick;
            double copyOnly = copyAlone(w, out, false, seed) - jpick;
            double crossCopy = copyAlone(w, out, true, seed) - jpick;
            double bget = (double) BenchNative.getLoop(engine, w.packedKeys, Workload.KEY_BYTES,
                    w.n, CALLS, seed) / CALLS - cpick;
            double bOneCopy = oneGet(w, engine, out, true, seed) - jpick;
            double hash = (double) BenchNative.hashLoop(w.packedKeys, Workload.KEY_BYTES, w.n,
                    CALLS) / CALLS - cpick;
            double guard = (double) BenchNative.guardLoop(CALLS) / CALLS;
            if (r >= warm) {
                double[] row = {copy, view, cross, cget, hash, fenced, one, oneCopy, region,
                    critical, copyOnly, crossCopy, bget, bOneCopy, guard, copy - cget};
                for (int i = 0; i < row.length; i++) {
                    v[i][r - warm] = row[i];
                }
            }
        }
        BenchNative.close(own);
        System.out.printf("%n### Where a get's nanoseconds go: %,d entries, one thread, %d rounds"
                + " of %,d gets, interleaved%n%n", w.n, rounds, CALLS);
        System.out.println("ns of the thread's CPU time per get, median (min-max); the key choice of"
                + " each loop is subtracted.");
        System.out.println();
        System.out.println("| component | ns |");
        System.out.println("|---|---|");
        for (int i = 0; i < names.length; i++) {
            System.out.printf("| %s | %s |%n", names[i], Harness.median(v[i], 1));
        }
    }
}
