package org.larder;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.larder.TestSupport.b;
import static org.larder.TestSupport.bytes;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The compression option: every read and compare sees the original bytes; memory falls. */
class CompressionTest {
    /* A JSON-like document: compresses well. */
    private static byte[] doc(int i, int len) {
        StringBuilder sb = new StringBuilder();
        while (sb.length() < len) {
            sb.append("{\"id\":").append(i).append(",\"name\":\"user-").append(i)
                    .append("\",\"tags\":[\"a\",\"b\",\"c\"],\"active\":true},");
        }
        return Arrays.copyOf(b(sb.toString()), len);
    }

    private static byte[] random(Random r, int len) {
        byte[] v = new byte[len];
        r.nextBytes(v);
        return v;
    }

    private static byte[] halfNoise(Random r, int i) {
        byte[] v = doc(i, 4096);
        byte[] noise = random(r, 2048);
        System.arraycopy(noise, 0, v, 0, noise.length);
        return v;
    }

    @Test
    void everyReadSeesTheOriginalBytes() {
        try (LarderCache<byte[], byte[]> c = bytes().compression(64).build()) {
            Random r = new Random(1);
            for (int len : new int[] { 0, 1, 63, 64, 65, 500, 4096, 100_000 }) {
                byte[][] kinds = { doc(len, len), random(r, len) };
                for (int kind = 0; kind < kinds.length; kind++) {
                    byte[] v = kinds[kind];
                    byte[] key = b("k" + len + "/" + kind);
                    c.put(key, v);
                    assertArrayEquals(v, c.get(key), "get, length " + len);
                    byte[] dst = new byte[len + 3];
                    assertEquals(len, c.getInto(key, dst));
                    assertArrayEquals(v, Arrays.copyOf(dst, len), "getInto, length " + len);
                    if (len > 0) {
                        assertEquals(len, c.getInto(key, new byte[len - 1]),
                                "a short buffer is told the original length");
                    }
                    ByteBuffer direct = ByteBuffer.allocateDirect(len);
                    assertEquals(len, c.getInto(key, direct));
                    direct.flip();
                    byte[] fromDirect = new byte[len];
                    direct.get(fromDirect);
                    assertArrayEquals(v, fromDirect, "getInto(direct), length " + len);
                    AtomicReference<byte[]> seen = new AtomicReference<>();
                    assertTrue(c.getDirect(key, view -> seen.set(view.toByteArray())));
                    assertArrayEquals(v, seen.get(), "getDirect, length " + len);
                    byte[][] values = { new byte[len] };
                    int[] lengths = new int[1];
                    assertEquals(1, c.getAllInto(new byte[][] { key }, 1, values, lengths));
                    assertEquals(len, lengths[0]);
                    assertArrayEquals(v, values[0], "getAllInto, length " + len);
                    Map<byte[], byte[]> all = c.getAll(Arrays.asList(key, b("absent")));
                    assertEquals(1, all.size());
                    assertArrayEquals(v, all.values().iterator().next(), "getAll, length " + len);
                }
            }
        }
    }

    @Test
    void comparisonsUseTheOriginalBytes() {
        try (LarderCache<byte[], byte[]> c = bytes().compression(16).build()) {
            byte[] v1 = doc(1, 2000), v2 = doc(2, 2000);
            c.put(b("k"), v1);
            assertFalse(c.replace(b("k"), v2, v1), "a different expected value");
            assertTrue(c.replace(b("k"), v1, v2));
            assertArrayEquals(v2, c.get(b("k")));
            assertFalse(c.addOrReplace(b("k"), v1, v1));
            assertTrue(c.addOrReplace(b("k"), v2, v1));
            assertFalse(c.remove(b("k"), v2));
            assertTrue(c.remove(b("k"), v1));
            assertFalse(c.containsKey(b("k")));
        }
    }

    /** The same entries in a compressing cache and a plain one: fewer bytes only where it saves. */
    @Test
    void compressibleValuesTakeFewerBytes() {
        try (LarderCache<byte[], byte[]> plain = bytes().build();
                LarderCache<byte[], byte[]> packed = bytes().compression(256).build();
                LarderCache<byte[], byte[]> noisy = bytes().compression(256).build();
                LarderCache<byte[], byte[]> noisyPlain = bytes().build()) {
            Random r = new Random(2);
            for (int i = 0; i < 1000; i++) {
                byte[] key = b("key-" + i);
                byte[] v = doc(i, 4096);
                plain.put(key, v);
                packed.put(key, v);
                byte[] n = random(r, 4096);
                noisy.put(key, n);
                noisyPlain.put(key, n);
            }
            long p = plain.stats().usedBytes(), q = packed.stats().usedBytes();
            assertTrue(q * 2 < p, "4 KiB documents: " + q + " bytes compressed vs " + p);
            assertEquals(noisyPlain.stats().usedBytes(), noisy.stats().usedBytes(),
                    "incompressible values are stored raw");
            for (int i = 0; i < 1000; i += 97) {
                assertArrayEquals(doc(i, 4096), packed.get(b("key-" + i)));
            }
            int walked = 0;
            try (CloseableIterator<Map.Entry<byte[], byte[]>> it = packed.entryIterator()) {
                while (it.hasNext()) {
                    Map.Entry<byte[], byte[]> e = it.next();
                    int i = Integer.parseInt(new String(e.getKey(), 4, e.getKey().length - 4,
                            StandardCharsets.UTF_8));
                    assertArrayEquals(doc(i, 4096), e.getValue(), "iterated value of key-" + i);
                    walked++;
                }
            }
            assertEquals(1000, walked);
        }
    }

    @Test
    void belowTheThresholdOrWithoutEnoughSavingValuesStayRaw() {
        try (LarderCache<byte[], byte[]> plain = bytes().build();
                LarderCache<byte[], byte[]> high = bytes().compression(8192).build();
                LarderCache<byte[], byte[]> greedy = bytes().compression(64, 60).build()) {
            // Half of each value is fresh random bytes, so no codec (neither LZ4 nor a zstd
            // dictionary trained on earlier values, whenever the maintainer trains it) can save
            // 60% of it, while the JSON half keeps it compressible enough for the other caches.
            Random r = new Random(3);
            byte[][] values = new byte[200][];
            for (int i = 0; i < values.length; i++) {
                values[i] = halfNoise(r, i);
                plain.put(b("k" + i), values[i]);
                high.put(b("k" + i), values[i]);
                greedy.put(b("k" + i), values[i]);
            }
            long p = plain.stats().usedBytes();
            assertEquals(p, high.stats().usedBytes(), "values under minValueBytes");
            assertEquals(p, greedy.stats().usedBytes(), "a 60% saving is never reached");
            assertArrayEquals(values[7], greedy.get(b("k7")));
        }
    }

    @Test
    void settingsAreChecked() {
        assertThrows(IllegalArgumentException.class, () -> bytes().compression(-1));
        assertThrows(IllegalArgumentException.class,
                () -> bytes().compression(LarderCacheBuilder.VALUE_LIMIT + 1));
        assertThrows(IllegalArgumentException.class, () -> bytes().compression(64, -1));
        assertThrows(IllegalArgumentException.class, () -> bytes().compression(64, 100));
        try (LarderCache<byte[], byte[]> off = bytes().compression(0).build()) {
            off.put(b("k"), doc(0, 1000));
            assertArrayEquals(doc(0, 1000), off.get(b("k")));
        }
    }
}
