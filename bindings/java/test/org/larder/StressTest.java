package org.larder;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.zip.CRC32;
import org.junit.jupiter.api.Test;

/**
 * Threads (more than cores) read and compare-and-set self-checking values:
 * each value carries its key, a version and a checksum, and its length
 * changes with the version. Checked: no read ever sees a torn, foreign or
 * corrupt value, through any read path; each reader sees a key's versions
 * only go up; no compare-and-set is lost (a key's final version is the
 * number of successful CAS on it); the listener hears every replacement.
 *
 * <p>Seed and duration: -Dlarder.stress.seed, -Dlarder.stress.ms (default
 * 3000); the seed is printed.
 */
class StressTest {
    private static final int KEYS = 256;
    private static final int HEADER = 16;
    private static final long MIN_ROUNDS = 1000;

    private static byte[] key(int id) {
        return ("stress-key-" + id).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    }

    /** [id int][version long][payload length int][payload][crc32 of all before, long]. */
    private static byte[] value(int id, long version, CRC32 crc) {
        int payload = (int) ((id * 31 + version * 17) % 200);
        ByteBuffer b = ByteBuffer.allocate(HEADER + payload + 8);
        b.putInt(id).putLong(version).putInt(payload);
        for (int i = 0; i < payload; i++) {
            b.put((byte) (id + version + i));
        }
        crc.reset();
        crc.update(b.array(), 0, HEADER + payload);
        b.putLong(crc.getValue());
        return b.array();
    }

    /** The version of a value read for key id, or throws describing the corruption. */
    private static long check(int id, byte[] v, int len, CRC32 crc) {
        if (len < HEADER + 8) {
            throw new AssertionError("key " + id + ": value of " + len + " bytes is torn");
        }
        ByteBuffer b = ByteBuffer.wrap(v, 0, len);
        int gotId = b.getInt();
        long version = b.getLong();
        int payload = b.getInt();
        if (gotId != id || payload != len - HEADER - 8) {
            throw new AssertionError("key " + id + ": foreign or torn value (id " + gotId
                    + ", payload " + payload + ", length " + len + ")");
        }
        crc.reset();
        crc.update(v, 0, HEADER + payload);
        if (crc.getValue() != ByteBuffer.wrap(v, HEADER + payload, 8).getLong()) {
            throw new AssertionError("key " + id + " version " + version + ": bad checksum");
        }
        return version;
    }

    @Test
    void selfCheckingValuesAcrossThreads() throws Exception {
        long seed = Long.getLong("larder.stress.seed", System.nanoTime());
        long millis = Long.getLong("larder.stress.ms", 3000);
        int threads = Math.max(4, 2 * Runtime.getRuntime().availableProcessors());
        System.out.println("StressTest: seed " + seed + ", " + threads + " threads, " + millis
                + " ms");
        AtomicLong replaced = new AtomicLong();
        Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
        AtomicLongArray wins = new AtomicLongArray(KEYS);
        try (LarderCache<byte[], byte[]> c = TestSupport.bytes().capacity(256L << 20)
                .removalListener((k, v, cause) -> {
                    if (cause == RemovalCause.REPLACED) {
                        replaced.incrementAndGet();
                    }
                }).build()) {
            CRC32 crc = new CRC32();
            for (int id = 0; id < KEYS; id++) {
                c.put(key(id), value(id, 0, crc));
            }
            long deadline = System.nanoTime() + millis * 1_000_000L;
            List<Thread> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                long threadSeed = seed * 31 + t;
                Thread w = new Thread(() -> {
                    try {
                        work(c, threadSeed, deadline, wins);
                    } catch (Throwable e) {
                        failures.add(e);
                    }
                }, "stress-" + t);
                workers.add(w);
                w.start();
            }
            for (Thread w : workers) {
                w.join();
            }
            if (!failures.isEmpty()) {
                throw new AssertionError("seed " + seed + ": " + failures.peek(), failures.peek());
            }
            long total = 0;
            byte[] buf = new byte[512];
            for (int id = 0; id < KEYS; id++) {
                int len = c.getInto(key(id), buf);
                assertEquals(wins.get(id), check(id, buf, len, crc),
                        "seed " + seed + ": key " + id + " lost a compare-and-set");
                total += wins.get(id);
            }
            long cas = total;
            assertTrue(cas > 0);
            TestSupport.waitUntil("the listener hears every replacement",
                    () -> replaced.get() == cas);
            System.out.println("StressTest: " + cas + " compare-and-sets");
        }
    }

    private static void work(LarderCache<byte[], byte[]> c, long seed, long deadline,
            AtomicLongArray wins) {
        CRC32 crc = new CRC32();
        long[] lastSeen = new long[KEYS];
        byte[][] keys = new byte[KEYS][];
        for (int id = 0; id < KEYS; id++) {
            keys[id] = key(id);
        }
        byte[] buf = new byte[512];
        byte[][] batchKeys = new byte[8][];
        int[] batchIds = new int[8];
        byte[][] batchValues = new byte[8][512];
        int[] lengths = new int[8];
        long rng = seed | 1;
        // At least MIN_ROUNDS rounds, however late a loaded machine starts the thread:
        // a thread that found its deadline passed would do nothing, and with all of
        // them so, no compare-and-set would be tried.
        for (long round = 0; round < MIN_ROUNDS || System.nanoTime() < deadline; round++) {
            rng ^= rng << 13;
            rng ^= rng >>> 7;
            rng ^= rng << 17;
            int id = (int) ((rng >>> 8) % KEYS);
            switch ((int) ((rng >>> 40) % 5)) {
            case 0: { // compare-and-set the next version
                int len = c.getInto(keys[id], buf);
                long v = check(id, buf, len, crc);
                byte[] old = java.util.Arrays.copyOf(buf, len);
                if (c.replace(keys[id], old, value(id, v + 1, crc))) {
                    wins.incrementAndGet(id);
                }
                lastSeen[id] = Math.max(lastSeen[id], v);
                break;
            }
            case 1: {
                long[] got = new long[1];
                c.getDirect(keys[id], view -> {
                    byte[] copy = view.toByteArray();
                    got[0] = check(id, copy, copy.length, crc);
                });
                seen(id, got[0], lastSeen);
                break;
            }
            case 2: {
                for (int i = 0; i < batchKeys.length; i++) {
                    batchIds[i] = (id + i * 37) % KEYS;
                    batchKeys[i] = keys[batchIds[i]];
                }
                c.getAllInto(batchKeys, batchKeys.length, batchValues, lengths);
                for (int i = 0; i < batchKeys.length; i++) {
                    seen(batchIds[i], check(batchIds[i], batchValues[i], lengths[i], crc), lastSeen);
                }
                break;
            }
            case 3: {
                byte[] v = c.get(keys[id]);
                seen(id, check(id, v, v.length, crc), lastSeen);
                break;
            }
            default: {
                ByteBuffer bb = ByteBuffer.allocate(512);
                int len = c.getInto(keys[id], bb);
                seen(id, check(id, bb.array(), len, crc), lastSeen);
                break;
            }
            }
        }
    }

    private static void seen(int id, long version, long[] lastSeen) {
        if (version < lastSeen[id]) {
            throw new AssertionError("key " + id + ": version " + version + " read after "
                    + lastSeen[id]);
        }
        lastSeen[id] = version;
    }
}
