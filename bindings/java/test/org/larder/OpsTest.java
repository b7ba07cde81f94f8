package org.larder;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.larder.TestSupport.b;
import static org.larder.TestSupport.bytes;
import static org.larder.TestSupport.s;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/** Every operation's semantics and every error it documents. */
class OpsTest {
    @Test
    void putGetRemove() {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            assertNull(c.get(b("k")));
            assertFalse(c.containsKey(b("k")));
            c.put(b("k"), b("v1"));
            assertEquals("v1", s(c.get(b("k"))));
            assertTrue(c.containsKey(b("k")));
            c.put(b("k"), b("v2"));
            assertEquals("v2", s(c.get(b("k"))));
            assertTrue(c.remove(b("k")));
            assertFalse(c.remove(b("k")));
            assertNull(c.get(b("k")));
        }
    }

    /** Short keys take another way into native code on reads (two longs): every length. */
    @Test
    void everyKeyLengthReadsWhatWasWritten() {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            for (int len = 1; len <= 40; len++) {
                for (int last = 0; last < 3; last++) {
                    byte[] key = new byte[len];
                    for (int i = 0; i < len; i++) {
                        key[i] = (byte) (i * 7 + len);
                    }
                    key[len - 1] = (byte) last;
                    c.put(key, b(len + "/" + last));
                }
            }
            byte[] dst = new byte[16];
            for (int len = 1; len <= 40; len++) {
                for (int last = 0; last < 3; last++) {
                    byte[] key = new byte[len];
                    for (int i = 0; i < len; i++) {
                        key[i] = (byte) (i * 7 + len);
                    }
                    key[len - 1] = (byte) last;
                    String want = len + "/" + last;
                    assertEquals(want, s(c.get(key)));
                    assertEquals(want.length(), c.getInto(key, dst));
                    assertEquals(want, s(Arrays.copyOf(dst, want.length())));
                    assertTrue(c.containsKey(key));
                    key[0] ^= 0x55;
                    assertNull(c.get(key), "a key that differs in its first byte");
                }
            }
        }
    }

    /** Values are copied out long-wise up to 16 bytes and in bulk beyond: every length around both. */
    @Test
    void everyValueLengthReadsWhatWasWritten() {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            for (int len = 0; len <= 300; len++) {
                byte[] v = new byte[len];
                for (int i = 0; i < len; i++) {
                    v[i] = (byte) (i * 31 + len);
                }
                byte[] key = b("v" + len);
                c.put(key, v);
                assertArrayEquals(v, c.get(key), "get, " + len + " bytes");
                byte[] dst = new byte[len + 3];
                Arrays.fill(dst, (byte) 0x5a);
                assertEquals(len, c.getInto(key, dst));
                assertArrayEquals(v, Arrays.copyOf(dst, len), "getInto(byte[]), " + len + " bytes");
                assertEquals(0x5a, dst[len], "getInto(byte[]) wrote past the value");
                ByteBuffer heap = ByteBuffer.allocate(len + 5).position(2);
                assertEquals(len, c.getInto(key, heap));
                assertEquals(2 + len, heap.position());
                byte[] got = new byte[len];
                heap.position(2);
                heap.get(got);
                assertArrayEquals(v, got, "getInto(heap ByteBuffer), " + len + " bytes");
            }
        }
    }

    @Test
    void emptyValueIsAValue() {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            c.put(b("k"), new byte[0]);
            assertArrayEquals(new byte[0], c.get(b("k")));
            assertEquals(0, c.getInto(b("k"), new byte[0]));
            assertTrue(c.containsKey(b("k")));
        }
    }

    @Test
    void conditionalWrites() {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            assertFalse(c.replace(b("k"), b("x")), "replace of an absent key");
            assertTrue(c.putIfAbsent(b("k"), b("a")));
            assertFalse(c.putIfAbsent(b("k"), b("b")));
            assertEquals("a", s(c.get(b("k"))));
            assertTrue(c.replace(b("k"), b("c")));
            assertEquals("c", s(c.get(b("k"))));
            assertFalse(c.replace(b("k"), b("zz"), b("d")), "CAS with a wrong old value");
            assertTrue(c.replace(b("k"), b("c"), b("d")));
            assertEquals("d", s(c.get(b("k"))));
            assertFalse(c.replace(b("none"), b("d"), b("e")), "CAS on an absent key");
            assertFalse(c.remove(b("k"), b("c")));
            assertTrue(c.remove(b("k"), b("d")));
            assertFalse(c.containsKey(b("k")));
        }
    }

    @Test
    void addOrReplaceAddsOrComparesAsInOhc() {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            assertTrue(c.addOrReplace(b("k"), b("old"), b("a")), "absent: added");
            assertEquals("a", s(c.get(b("k"))));
            assertFalse(c.addOrReplace(b("k"), b("old"), b("b")), "present and different");
            assertEquals("a", s(c.get(b("k"))));
            assertTrue(c.addOrReplace(b("k"), b("a"), b("b")), "present and equal");
            assertEquals("b", s(c.get(b("k"))));
            assertTrue(c.addOrReplace(b("k"), b("b"), b("c"), 1, TimeUnit.HOURS));
            assertTrue(c.remainingTTLmillis(b("k")) <= 3_600_000);
        }
    }

    @Test
    void getIntoByteArray() {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            c.put(b("k"), b("hello"));
            byte[] dst = new byte[8];
            Arrays.fill(dst, (byte) 'x');
            assertEquals(5, c.getInto(b("k"), dst));
            assertEquals("helloxxx", s(dst));
            byte[] small = {'y', 'y'};
            assertEquals(5, c.getInto(b("k"), small), "too small: the length, nothing copied");
            assertEquals("yy", s(small));
            assertEquals(LarderCache.NOT_FOUND, c.getInto(b("none"), dst));
        }
    }

    @Test
    void getIntoByteBuffer() {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            c.put(b("k"), b("hello"));
            for (ByteBuffer dst : new ByteBuffer[] {ByteBuffer.allocate(10),
                ByteBuffer.allocateDirect(10)}) {
                dst.position(2);
                assertEquals(5, c.getInto(b("k"), dst));
                assertEquals(7, dst.position());
                dst.flip().position(2);
                byte[] got = new byte[5];
                dst.get(got);
                assertEquals("hello", s(got));
                dst.clear().position(7);
                assertEquals(5, c.getInto(b("k"), dst), "3 left: the length, nothing copied");
                assertEquals(7, dst.position());
                assertEquals(LarderCache.NOT_FOUND, c.getInto(b("none"), dst));
            }
            assertThrows(ReadOnlyBufferException.class,
                    () -> c.getInto(b("k"), ByteBuffer.allocate(8).asReadOnlyBuffer()));
        }
    }

    @Test
    void valuesLargerThanTheScratchSpace() {
        try (LarderCache<byte[], byte[]> c = bytes().maxValueBytes(4 << 20).build()) {
            for (int size : new int[] {4095, 4096, 100_000, (1 << 20) + 3, 3 << 20}) {
                byte[] v = new byte[size];
                for (int i = 0; i < size; i++) {
                    v[i] = (byte) (i * 31 + size);
                }
                byte[] key = b("k" + size);
                c.put(key, v);
                assertArrayEquals(v, c.get(key));
                byte[] dst = new byte[size];
                assertEquals(size, c.getInto(key, dst));
                assertArrayEquals(v, dst);
                ByteBuffer bb = ByteBuffer.allocateDirect(size);
                assertEquals(size, c.getInto(key, bb));
                assertEquals(size, bb.position());
                assertTrue(c.replace(key, v, b("small")), "CAS with a large old value");
                assertEquals("small", s(c.get(key)));
            }
        }
    }

    @Test
    void nullsThrowNullPointerException() {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            c.put(b("k"), b("v"));
            assertThrows(NullPointerException.class, () -> c.get(null));
            assertThrows(NullPointerException.class, () -> c.put(null, b("v")));
            assertThrows(NullPointerException.class, () -> c.put(b("k"), null));
            assertThrows(NullPointerException.class, () -> c.putIfAbsent(b("k"), null));
            assertThrows(NullPointerException.class, () -> c.replace(b("k"), null));
            assertThrows(NullPointerException.class, () -> c.replace(b("k"), null, b("v")));
            assertThrows(NullPointerException.class, () -> c.replace(b("k"), b("v"), null));
            assertThrows(NullPointerException.class, () -> c.addOrReplace(b("k"), null, b("v")));
            assertThrows(NullPointerException.class, () -> c.remove(null));
            assertEquals(false, c.remove(b("k"), null), "a null value is never present");
            assertThrows(NullPointerException.class, () -> c.containsKey(null));
            assertThrows(NullPointerException.class, () -> c.touch(null));
            assertThrows(NullPointerException.class, () -> c.remainingTTLmillis(null));
            assertThrows(NullPointerException.class, () -> c.getInto(b("k"), (byte[]) null));
            assertThrows(NullPointerException.class, () -> c.getInto(null, new byte[4]));
            assertThrows(NullPointerException.class, () -> c.getInto(b("k"), (ByteBuffer) null));
            assertThrows(NullPointerException.class, () -> c.getDirect(b("k"), null));
            assertThrows(NullPointerException.class, () -> c.getAll(Arrays.asList(b("k"), null)));
            assertThrows(NullPointerException.class, () -> c.put(b("k"), b("v"), 1, null));
            assertEquals("v", s(c.get(b("k"))), "previous value intact");
        }
    }

    @Test
    void sizesOverTheLimitsThrowWithTheLimit() {
        try (LarderCache<byte[], byte[]> c = bytes().maxKeyBytes(16).maxValueBytes(100).build()) {
            c.put(b("k"), b("v"));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> c.put(new byte[17], b("v")));
            assertTrue(e.getMessage().contains("16"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> c.get(new byte[17]));
            assertTrue(e.getMessage().contains("16"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> c.get(new byte[0]));
            assertThrows(IllegalArgumentException.class, () -> c.put(new byte[0], b("v")));
            e = assertThrows(IllegalArgumentException.class,
                    () -> c.replace(b("k"), new byte[101]));
            assertTrue(e.getMessage().contains("100"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> c.putIfAbsent(b("k"), new byte[101]));
            assertThrows(IllegalArgumentException.class,
                    () -> c.addOrReplace(b("k"), b("v"), new byte[101]));
            assertEquals("v", s(c.get(b("k"))), "a refused conditional write keeps the value");
            c.put(new byte[16], new byte[100]);
            assertEquals(100, c.get(new byte[16]).length, "exactly at the limits");
            e = assertThrows(IllegalArgumentException.class, () -> c.put(b("k"), new byte[101]));
            assertTrue(e.getMessage().contains("100"), e.getMessage());
            assertNull(c.get(b("k")), "a refused put removes the previous value (as OHC)");
            c.put(b("k"), b("v"));
            assertThrows(IllegalArgumentException.class,
                    () -> c.put(b("k"), new byte[101], 1, TimeUnit.MINUTES));
            assertNull(c.get(b("k")), "also with a TTL");
            assertEquals(100, c.get(new byte[16]).length, "other entries intact");
        }
    }

    @Test
    void anEntryOverAnEighthOfTheCapacityThrows() {
        long capacity = 1 << 20;
        try (LarderCache<byte[], byte[]> c = bytes().capacity(capacity).maxValueBytes(1 << 20)
                .build()) {
            c.put(b("k"), b("v"));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> c.replace(b("k"), new byte[(int) capacity / 8]));
            assertTrue(e.getMessage().contains("1/8"), e.getMessage());
            assertEquals("v", s(c.get(b("k"))), "a refused replace keeps the value");
            c.put(b("other"), b("o"));
            e = assertThrows(IllegalArgumentException.class,
                    () -> c.put(b("k"), new byte[(int) capacity / 8]));
            assertTrue(e.getMessage().contains("1/8"), e.getMessage());
            assertNull(c.get(b("k")), "a refused put removes the previous value");
            assertEquals("o", s(c.get(b("other"))), "other entries intact");
        }
    }

    /*
     * A value larger than the JVM lets the thread's scratch buffer grow to
     * (direct memory: -XX:MaxDirectMemorySize, by default -Xmx, which ctest
     * gives java_unit as 512m) is refused as memory the engine cannot get,
     * LarderOutOfMemoryException with ENOMEM, and the put removes the
     * previous value as for the engine's refusals; a conditional write keeps
     * it. Both threw the JVM's OutOfMemoryError ("Cannot reserve ... bytes
     * of direct buffer memory") instead.
     */
    @Test
    void aValueOverTheJvmsDirectMemoryIsRefusedAsLarderOutOfMemory() {
        int size = LarderCacheBuilder.VALUE_LIMIT - 64;
        assertTrue(directMemoryLimit() < size, "run with a direct memory limit under 1 GiB"
                + " (ctest's -Xmx512m): " + directMemoryLimit());
        try (LarderCache<String, Integer> c = LarderCacheBuilder.<String, Integer>newBuilder()
                .keySerializer(CacheSerializers.STRING).valueSerializer(new Sized())
                .capacity(16L << 30).maxValueBytes(LarderCacheBuilder.VALUE_LIMIT).build()) {
            c.put("k", 10);
            c.put("other", 20);
            LarderOutOfMemoryException e = assertThrows(LarderOutOfMemoryException.class,
                    () -> c.replace("k", size));
            assertEquals(Native.ENOMEM, e.code());
            assertTrue(e.getMessage().contains("MaxDirectMemorySize"), e.getMessage());
            assertEquals(Integer.valueOf(10), c.get("k"), "a refused replace keeps the value");
            assertThrows(LarderOutOfMemoryException.class, () -> c.put("k", size));
            assertNull(c.get("k"), "a refused put removes the previous value");
            assertEquals(Integer.valueOf(20), c.get("other"), "other entries intact");
            c.put("k", 30);
            assertEquals(Integer.valueOf(30), c.get("k"), "the thread's scratch still serves");
        }
    }

    /*
     * An expected value over maxValueBytes (remove(k, v), replace(k, old, v),
     * addOrReplace) can equal no stored value: the answer is false (or, for
     * addOrReplace of an absent key, the add), found without serializing
     * it. The binding copied it into the thread's scratch buffer first, so
     * that one over the JVM's direct memory threw LarderOutOfMemoryException
     * where the answer is false.
     */
    @Test
    void anExpectedValueOverTheLimitIsUnequalWithoutBeingCopied() {
        int size = LarderCacheBuilder.VALUE_LIMIT - 64;
        assertTrue(directMemoryLimit() < size, "run with a direct memory limit under 1 GiB"
                + " (ctest's -Xmx512m): " + directMemoryLimit());
        Sized sized = new Sized();
        try (LarderCache<String, Integer> c = LarderCacheBuilder.<String, Integer>newBuilder()
                .keySerializer(CacheSerializers.STRING).valueSerializer(sized)
                .capacity(16 << 20).maxValueBytes(1 << 20).build()) {
            c.put("k", 10);
            int before = sized.serialized;
            assertFalse(c.remove("k", size));
            assertFalse(c.replace("k", size, 20));
            assertFalse(c.addOrReplace("k", size, 20));
            assertFalse(c.remove("absent", size));
            assertFalse(c.replace("absent", size, 20));
            assertEquals(before + 3, sized.serialized, "only the new values were serialized");
            assertEquals(Integer.valueOf(10), c.get("k"));
            assertNull(c.get("absent"));
            assertTrue(c.addOrReplace("absent", size, 30), "an absent key is added");
            assertEquals(Integer.valueOf(30), c.get("absent"));
            c.cleanUp();
            LarderStats st = c.stats();
            assertEquals(3, st.hitCount() + st.missCount(), "only the three gets count");
        }
    }

    /* Serializes an Integer as that many bytes, left as the scratch holds
     * them: values of any size up to the 1 GiB limit without a heap array.
     * Counts its serialize calls. */
    private static final class Sized implements CacheSerializer<Integer> {
        int serialized;

        @Override
        public void serialize(Integer value, ByteBuffer buf) {
            serialized++;
            buf.position(buf.position() + value);
        }

        @Override
        public Integer deserialize(ByteBuffer buf) {
            return buf.remaining();
        }

        @Override
        public int serializedSize(Integer value) {
            return value;
        }
    }

    /* What allocateDirect may reserve in all: the option, or -Xmx when it is 0 (unset). */
    private static long directMemoryLimit() {
        String set = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class)
                .getVMOption("MaxDirectMemorySize").getValue();
        long limit = Long.parseLong(set);
        return limit > 0 ? limit : Runtime.getRuntime().maxMemory();
    }

    @Test
    void aTouchOverTheEntryLimitThrowsAndKeepsTheEntry() {
        long capacity = 1 << 20;
        try (LarderCache<byte[], byte[]> c = bytes().capacity(capacity).maxValueBytes(1 << 20)
                .build()) {
            // the largest value stored without a deadline: its deadline's 8 bytes do not fit
            int lo = 1, hi = (int) capacity / 8;
            while (hi - lo > 1) {
                int mid = (lo + hi) >>> 1;
                try {
                    c.put(b("k"), new byte[mid], LarderCache.NEVER_EXPIRE, TimeUnit.SECONDS);
                    lo = mid;
                } catch (IllegalArgumentException e) {
                    hi = mid;
                }
            }
            c.put(b("k"), new byte[lo], LarderCache.NEVER_EXPIRE, TimeUnit.SECONDS);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> c.touch(b("k"), 1, TimeUnit.HOURS));
            assertTrue(e.getMessage().contains("touch"), e.getMessage());
            assertEquals(lo, c.get(b("k")).length, "a refused touch keeps the value");
            assertEquals(LarderCache.NEVER_EXPIRE, c.remainingTTLmillis(b("k")),
                    "and its lack of a deadline");
            c.put(b("small"), b("v"), LarderCache.NEVER_EXPIRE, TimeUnit.SECONDS);
            assertTrue(c.touch(b("small"), 1, TimeUnit.HOURS), "a small entry's touch works");
        }
    }

    @Test
    void badTtlsThrow() {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            assertThrows(IllegalArgumentException.class,
                    () -> c.put(b("k"), b("v"), 0, TimeUnit.SECONDS));
            assertThrows(IllegalArgumentException.class,
                    () -> c.put(b("k"), b("v"), -5, TimeUnit.SECONDS));
            assertThrows(IllegalArgumentException.class,
                    () -> c.touch(b("k"), 0, TimeUnit.MILLISECONDS));
            assertFalse(c.containsKey(b("k")));
        }
    }

    @Test
    void everyCallOnAClosedCacheThrowsIllegalState() {
        LarderCache<byte[], byte[]> c = bytes().build();
        c.put(b("k"), b("v"));
        c.close();
        c.close(); // a no-op
        byte[] k = b("k");
        byte[] v = b("v");
        for (Consumer<LarderCache<byte[], byte[]>> op : Arrays.<Consumer<LarderCache<byte[], byte[]>>>asList(
                x -> x.get(k), x -> x.getInto(k, new byte[4]), x -> x.getInto(k, ByteBuffer.allocate(4)),
                x -> x.getDirect(k, view -> { }), x -> x.containsKey(k), x -> x.remainingTTLmillis(k),
                x -> x.getAll(Arrays.asList(k)),
                x -> x.getAllInto(new byte[][] {k}, 1, new byte[][] {new byte[4]}, new int[1]),
                x -> x.put(k, v), x -> x.put(k, v, 1, TimeUnit.SECONDS), x -> x.putIfAbsent(k, v),
                x -> x.replace(k, v), x -> x.replace(k, v, v), x -> x.addOrReplace(k, v, v),
                x -> x.remove(k), x -> x.remove(k, v), x -> x.touch(k), x -> x.clear(),
                x -> x.setCapacity(1 << 20), x -> x.capacity(), x -> x.size(), x -> x.stats(),
                x -> x.memUsed(), x -> x.freeCapacity(), x -> x.sizeClassStats())) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> op.accept(c));
            assertTrue(e.getMessage().contains("closed"), e.getMessage());
        }
    }

    @Test
    void clearRemovesEverything() {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            for (int i = 0; i < 1000; i++) {
                c.put(b("k" + i), b("v" + i));
            }
            c.clear();
            for (int i = 0; i < 1000; i++) {
                assertFalse(c.containsKey(b("k" + i)));
            }
            c.put(b("after"), b("x"));
            assertEquals("x", s(c.get(b("after"))));
        }
    }

    @Test
    void capacityCanChange() {
        try (LarderCache<byte[], byte[]> c = bytes().capacity(8 << 20).build()) {
            assertEquals(8 << 20, c.capacity());
            c.setCapacity(2 << 20);
            assertEquals(2 << 20, c.capacity());
            assertThrows(IllegalArgumentException.class, () -> c.setCapacity(1000));
            // Past the engine's ceiling (2^62 - 1): the message names the range.
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> c.setCapacity(1L << 62));
            assertTrue(e.getMessage().contains("capacity"), e.getMessage());
            c.setCapacity((1L << 62) - 1);
            c.setCapacity(2 << 20);
            assertEquals(2 << 20, c.capacity());
            for (int i = 0; i < 100; i++) {
                c.put(b("k" + i), new byte[100]);
            }
            TestSupport.waitUntil("the maintainer counts 100 entries", () -> c.size() == 100);
            assertTrue(c.memUsed() >= 100 * 100);
            assertEquals(c.capacity() - c.memUsed(), c.freeCapacity());
        }
    }

    @Test
    void aPutWithNoRoomThrowsBusyAndRemovesThePreviousValue() throws Exception {
        CountDownLatch stuck = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        RemovalListener<byte[], byte[]> blocking = (k, v, cause) -> {
            stuck.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
        try (LarderCache<byte[], byte[]> c = bytes().capacity(1 << 20).maxValueBytes(64 << 10)
                .writeWaitMillis(0).removalListener(blocking).build()) {
            try {
                c.put(b("k"), b("v1"));
                c.put(b("k"), b("v2")); // REPLACED: the maintainer blocks in the listener
                stuck.await();
                byte[] big = new byte[60_000];
                LarderBusyException busy = null;
                for (int i = 0; i < 10_000 && busy == null; i++) {
                    try {
                        c.put(b("fill" + i), big);
                    } catch (LarderBusyException e) {
                        busy = e;
                    }
                }
                assertTrue(busy != null, "the memory bound (capacity + 4 MiB) was reached");
                assertEquals(Native.EBUSY, busy.code());
                assertThrows(LarderBusyException.class, () -> c.replace(b("k"), big));
                assertEquals("v2", s(c.get(b("k"))), "a refused replace keeps the value");
                assertThrows(LarderBusyException.class, () -> c.put(b("k"), big));
                assertNull(c.get(b("k")), "a refused put removes the previous value");
            } finally {
                release.countDown();
            }
            TestSupport.waitUntil("writes succeed again once the maintainer runs", () -> {
                try {
                    c.put(b("k"), b("v3"));
                    return true;
                } catch (LarderBusyException e) {
                    return false;
                }
            });
            assertEquals("v3", s(c.get(b("k"))));
        }
    }
}
