package org.larder;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.larder.TestSupport.b;
import static org.larder.TestSupport.bytes;
import static org.larder.TestSupport.s;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The zero-copy view's reads and rules, and the batch reads. */
class ViewAndBatchTest {
    @Test
    void theViewReadsTheStoredBytesBigEndian() {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            ByteBuffer v = ByteBuffer.allocate(15).put((byte) -3).putShort((short) -2)
                    .putInt(0x12345678).putLong(0x0102030405060708L);
            c.put(b("k"), v.array());
            AtomicReference<String> seen = new AtomicReference<>();
            assertTrue(c.getDirect(b("k"), view -> {
                byte[] copy = new byte[4];
                view.getBytes(3, copy, 0, 4);
                seen.set(view.length() + " " + view.getByte(0) + " " + view.getShort(1) + " "
                        + Integer.toHexString(view.getInt(3)) + " " + Long.toHexString(view.getLong(7))
                        + " " + Arrays.toString(copy) + " " + view.toByteArray().length);
            }));
            assertEquals("15 -3 -2 12345678 102030405060708 [18, 52, 86, 120] 15", seen.get());
            assertFalse(c.getDirect(b("none"), view -> seen.set("called on a miss")));
            assertTrue(seen.get().startsWith("15"));
        }
    }

    @Test
    void aViewIsValidOnlyInsideItsCallOnItsThread() throws Exception {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            c.put(b("k"), b("12345678"));
            AtomicReference<ValueView> kept = new AtomicReference<>();
            AtomicReference<Throwable> fromOther = new AtomicReference<>();
            c.getDirect(b("k"), view -> {
                kept.set(view);
                Thread other = new Thread(() -> {
                    try {
                        view.getByte(0);
                    } catch (Throwable t) {
                        fromOther.set(t);
                    }
                });
                other.start();
                try {
                    other.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                assertThrows(IndexOutOfBoundsException.class, () -> view.getByte(8));
                assertThrows(IndexOutOfBoundsException.class, () -> view.getLong(1));
                assertThrows(IndexOutOfBoundsException.class, () -> view.getByte(-1));
                assertThrows(IndexOutOfBoundsException.class,
                        () -> view.getBytes(0, new byte[4], 1, 4));
            });
            assertTrue(fromOther.get() instanceof IllegalStateException, String.valueOf(fromOther.get()));
            ValueView v = kept.get();
            assertThrows(IllegalStateException.class, () -> v.getByte(0));
            assertThrows(IllegalStateException.class, v::length);
            assertThrows(IllegalStateException.class, () -> v.getLong(0));
            assertThrows(IllegalStateException.class, v::toByteArray);
        }
    }

    @Test
    void theBytesStayWhileAnotherThreadOverwritesAndRemoves() throws Exception {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            byte[] old = new byte[1000];
            Arrays.fill(old, (byte) 'o');
            c.put(b("k"), old);
            CountDownLatch written = new CountDownLatch(1);
            byte[][] after = new byte[1][];
            c.getDirect(b("k"), view -> {
                Thread writer = new Thread(() -> {
                    byte[] fresh = new byte[1000];
                    for (int i = 0; i < 100; i++) {
                        Arrays.fill(fresh, (byte) i);
                        c.put(b("k"), fresh);
                    }
                    c.remove(b("k"));
                    c.clear();
                    written.countDown();
                });
                writer.start();
                try {
                    written.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                after[0] = view.toByteArray();
            });
            assertArrayEquals(old, after[0]);
            assertFalse(c.containsKey(b("k")));
        }
    }

    @Test
    void consumersMayNestAndThrow() {
        try (LarderCache<byte[], byte[]> c = bytes().build();
                LarderCache<byte[], byte[]> other = bytes().build()) {
            c.put(b("a"), b("AAAA"));
            c.put(b("b"), b("BB"));
            other.put(b("x"), b("XXX"));
            List<String> log = new ArrayList<>();
            c.getDirect(b("a"), outer -> {
                c.getDirect(b("b"), inner -> log.add("inner " + inner.length()));
                log.add("other " + s(other.get(b("x"))));
                c.put(b("c"), b("written inside"));
                log.add("outer " + outer.length() + " " + (char) outer.getByte(3));
            });
            assertEquals(Arrays.asList("inner 2", "other XXX", "outer 4 A"), log);
            assertEquals("written inside", s(c.get(b("c"))));
            IllegalArgumentException thrown = assertThrows(IllegalArgumentException.class,
                    () -> c.getDirect(b("a"), view -> {
                        throw new IllegalArgumentException("from the consumer");
                    }));
            assertEquals("from the consumer", thrown.getMessage());
            assertEquals("AAAA", s(c.get(b("a"))));
        }
    }

    @Test
    void closeInsideAConsumerIsRefused() {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            LarderCache<byte[], byte[]> other = bytes().build();
            c.put(b("a"), b("A"));
            c.getDirect(b("a"), view -> {
                assertThrows(IllegalStateException.class, c::close);
                assertThrows(IllegalStateException.class, other::close,
                        "any cache: close waits for every section, this one included");
            });
            assertEquals("A", s(c.get(b("a"))), "still open");
            other.close();
        }
    }

    @Test
    void getAllIntoCopiesFoundValuesAndReportsLengths() {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            int n = 1000;
            byte[][] keys = new byte[n][];
            for (int i = 0; i < n; i++) {
                keys[i] = b("key" + i);
                if (i % 3 != 0) {
                    c.put(keys[i], b("value" + i));
                }
            }
            byte[][] values = new byte[n][];
            for (int i = 0; i < n; i++) {
                values[i] = new byte[i % 10 == 1 ? 2 : 16];
            }
            int[] lengths = new int[n];
            int found = c.getAllInto(keys, n, values, lengths);
            int expect = 0;
            for (int i = 0; i < n; i++) {
                if (i % 3 == 0) {
                    assertEquals(LarderCache.NOT_FOUND, lengths[i]);
                    continue;
                }
                expect++;
                String v = "value" + i;
                assertEquals(v.length(), lengths[i]);
                if (i % 10 != 1) {
                    assertEquals(v, s(Arrays.copyOf(values[i], lengths[i])));
                } else {
                    assertArrayEquals(new byte[2], values[i], "too small: not copied");
                }
            }
            assertEquals(expect, found);
            assertEquals(0, c.getAllInto(keys, 0, values, lengths));
            assertThrows(IndexOutOfBoundsException.class,
                    () -> c.getAllInto(keys, n + 1, values, lengths));
        }
    }

    @Test
    void batchesOfLargeValuesFallBackPerKey() {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            int n = 16;
            byte[][] keys = new byte[n][];
            byte[][] values = new byte[n][];
            for (int i = 0; i < n; i++) {
                keys[i] = b("big" + i);
                byte[] v = new byte[50_000 + i];
                Arrays.fill(v, (byte) i);
                c.put(keys[i], v);
                values[i] = new byte[60_000];
            }
            int[] lengths = new int[n];
            assertEquals(n, c.getAllInto(keys, n, values, lengths));
            for (int i = 0; i < n; i++) {
                assertEquals(50_000 + i, lengths[i]);
                assertEquals((byte) i, values[i][50_000 + i - 1]);
            }
            Map<byte[], byte[]> all = c.getAll(Arrays.asList(keys));
            assertEquals(n, all.size());
            for (int i = 0; i < n; i++) {
                assertEquals(50_000 + i, all.get(keys[i]).length);
            }
        }
    }

    @Test
    void getAllReturnsThePresentKeys() {
        try (LarderCache<String, String> c = TestSupport.strings().build()) {
            for (int i = 0; i < 600; i++) {
                c.put("k" + i, "v" + i);
            }
            List<String> keys = new ArrayList<>();
            for (int i = 0; i < 1200; i += 2) {
                keys.add("k" + i);
            }
            Map<String, String> got = c.getAll(keys);
            assertEquals(300, got.size());
            for (Map.Entry<String, String> e : got.entrySet()) {
                assertEquals("v" + e.getKey().substring(1), e.getValue());
            }
            assertTrue(c.getAll(new ArrayList<>()).isEmpty());
        }
    }
}
