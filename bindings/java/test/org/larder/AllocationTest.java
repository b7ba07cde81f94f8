package org.larder;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.function.IntUnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * Reads allocate 0 bytes on the Java heap: 10^6 calls of each read path,
 * after a warm-up that lets the JIT compile them, measured with the JVM's
 * per-thread allocation counter (exact and deterministic, not a timing).
 * Writes of byte[] values are held to the same bar.
 *
 * <p>A path passes when one pass of 10^6 calls allocates 0 bytes; up to
 * {@link #PASSES} passes are made. Why not the first pass alone: on a loaded
 * machine the JIT may still be installing or replacing compiled code during
 * it, and such an event once allocated a few hundred bytes on the calling
 * thread (856 B in one pass of 10^6 calls, 1 run in 3 at load 15; 0 B per
 * call under -Xint and under C1 alone, so it is not the binding's code). A
 * path that allocates on every call still fails: each of its passes shows
 * at least 10^6 x 16 bytes.
 */
class AllocationTest {
    private static final int CALLS = 1_000_000;
    private static final int WARMUP = 300_000;
    private static final int KEYS = 1024;
    private static final int PASSES = 10;

    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private static long allocated() {
        return THREADS.getThreadAllocatedBytes(Thread.currentThread().getId());
    }

    /**
     * Heap bytes allocated by calls op(0) .. op(CALLS-1) after a warm-up: the
     * first pass that allocates nothing, else the least of PASSES passes.
     */
    private static long measure(String what, IntUnaryOperator op) {
        long sink = 0;
        for (int i = 0; i < WARMUP; i++) {
            sink += op.applyAsInt(i);
        }
        long least = Long.MAX_VALUE;
        for (int pass = 1; pass <= PASSES && least != 0; pass++) {
            long overhead = -allocated() + allocated();
            long before = allocated();
            for (int i = 0; i < CALLS; i++) {
                sink += op.applyAsInt(i);
            }
            long bytes = allocated() - before - overhead;
            System.out.printf("AllocationTest: %-34s %d bytes over %d calls (%.4f B/call; pass %d;"
                    + " sink %d)%n", what, bytes, CALLS, (double) bytes / CALLS, pass, sink);
            least = Math.min(least, bytes);
        }
        return least;
    }

    @Test
    void readsAllocateNothing() {
        THREADS.setThreadAllocatedMemoryEnabled(true);
        assertTrue(THREADS.isThreadAllocatedMemorySupported());
        try (LarderCache<byte[], byte[]> c = TestSupport.bytes().build()) {
            byte[][] keys = new byte[KEYS][];
            for (int i = 0; i < KEYS; i++) {
                keys[i] = ByteBuffer.allocate(16).putLong(i).putLong(~i).array();
                if (i % 8 != 0) {
                    c.put(keys[i], new byte[64]);
                }
            }
            byte[] dst = new byte[64];
            ByteBuffer heapDst = ByteBuffer.allocate(64);
            ByteBuffer directDst = ByteBuffer.allocateDirect(64);
            long[] acc = new long[1];
            DirectValueConsumer consumer = v -> acc[0] += v.getLong(0) + v.length();
            byte[][] batch = new byte[16][];
            byte[][] batchDst = new byte[16][64];
            int[] lengths = new int[16];
            long total = 0;
            total += measure("getInto(byte[]) (1/8 misses)", i -> c.getInto(keys[i & (KEYS - 1)], dst));
            total += measure("getInto(heap ByteBuffer)", i -> {
                heapDst.clear();
                return c.getInto(keys[i & (KEYS - 1)], heapDst);
            });
            total += measure("getInto(direct ByteBuffer)", i -> {
                directDst.clear();
                return c.getInto(keys[i & (KEYS - 1)], directDst);
            });
            total += measure("getDirect(reused consumer)",
                    i -> c.getDirect(keys[i & (KEYS - 1)], consumer) ? 1 : 0);
            total += measure("containsKey", i -> c.containsKey(keys[i & (KEYS - 1)]) ? 1 : 0);
            total += measure("remainingTTLmillis", i -> (int) c.remainingTTLmillis(keys[i & (KEYS - 1)]));
            total += measure("getAllInto, 16 keys per call (/16)", i -> {
                if ((i & 15) != 0) {
                    return 0;
                }
                for (int j = 0; j < 16; j++) {
                    batch[j] = keys[(i + j * 61) & (KEYS - 1)];
                }
                return c.getAllInto(batch, 16, batchDst, lengths);
            });
            byte[] value = new byte[64];
            total += measure("put(byte[], byte[]) (overwrites)", i -> {
                c.put(keys[(i & (KEYS - 1)) | 1], value);
                return 0;
            });
            assertEquals(0, total, "heap bytes allocated by 8 x 10^6 calls");
            long control = measure("get(K), the control (allocates)",
                    i -> c.get(keys[i & (KEYS - 1)]) == null ? 0 : 1);
            assertTrue(control >= (long) CALLS * 7 / 8 * 64,
                    "the meter sees the value arrays get() allocates: " + control);
        }
    }
}
