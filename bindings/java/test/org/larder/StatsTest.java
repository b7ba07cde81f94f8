package org.larder;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.larder.TestSupport.b;
import static org.larder.TestSupport.bytes;
import static org.larder.TestSupport.waitUntil;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.junit.jupiter.api.Test;

/** Counters, the memory audit, the JMX MBean and the Cleaner. */
class StatsTest {
    @Test
    void countersFollowTheOperations() {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            for (int i = 0; i < 100; i++) {
                c.put(b("k" + i), new byte[64]);
            }
            for (int i = 0; i < 150; i++) {
                c.getInto(b("k" + i), new byte[64]);
            }
            LarderStats st = c.stats();
            assertEquals(100, st.hitCount());
            assertEquals(50, st.missCount());
            assertEquals(100, st.putCount());
            assertEquals(0, st.listenerFailures());
            assertEquals(-1, st.get("no such counter"));
            Map<String, Long> all = st.asMap();
            for (String name : new String[] {"pages_mapped_bytes", "reserve_bytes", "large_bytes",
                "returning_bytes", "pages_returned_bytes", "index_bytes", "capacity_bytes"}) {
                assertTrue(all.containsKey(name), name);
            }
            waitUntil("the maintainer counts 100 entries", () -> c.size() == 100);
            assertTrue(c.stats().usedBytes() >= 100 * (64 + 4));
        }
    }

    /* keys[i] = "k" + i with an 8-byte buffer each, the even ones present:
     * more than one batch of 256, half hits and half misses. */
    private static void halfPresent(LarderCache<byte[], byte[]> c, byte[][] keys, byte[][] dsts) {
        for (int i = 0; i < keys.length; i++) {
            keys[i] = b("k" + i);
            dsts[i] = new byte[8];
            if (i % 2 == 0) {
                c.put(keys[i], new byte[8]);
            }
        }
    }

    /*
     * A getAllInto refused for a null key or buffer anywhere in its arrays
     * reads nothing, as a call refused for its arguments should: no hit or
     * miss counted. A null key was found batch by batch (256 keys each), a
     * null buffer after each batch's read, so both here threw after reads
     * had been counted (278 hits for the two calls).
     */
    @Test
    void aGetAllIntoRefusedForANullCountsNothing() {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            byte[][] keys = new byte[300][];
            byte[][] dsts = new byte[300][];
            halfPresent(c, keys, dsts);
            dsts[299] = null;
            assertThrows(NullPointerException.class, () -> c.getAllInto(keys, 300, dsts, new int[300]));
            dsts[299] = new byte[8];
            keys[299] = null;
            assertThrows(NullPointerException.class, () -> c.getAllInto(keys, 300, dsts, new int[300]));
            c.cleanUp();
            assertEquals(0, c.stats().hitCount(), "hits");
            assertEquals(0, c.stats().missCount(), "misses");
        }
    }

    /*
     * The same for a key the limits refuse (empty, over maxKeyBytes) in a
     * later batch, through getAll and getAllInto: each batch checked its own
     * keys, so the first 256 had been read and counted (128 hits and 128
     * misses per call) when the 300th threw; Caffeine's getAllPresent refuses
     * a bad key before it reads any.
     */
    @Test
    void aBatchRefusedForAKeyOverTheLimitsCountsNothing() {
        try (LarderCache<byte[], byte[]> c = bytes().maxKeyBytes(8).build()) {
            byte[][] keys = new byte[300][];
            byte[][] dsts = new byte[300][];
            halfPresent(c, keys, dsts);
            for (byte[] bad : new byte[][] {new byte[0], new byte[9]}) {
                keys[299] = bad;
                assertThrows(IllegalArgumentException.class,
                        () -> c.getAllInto(keys, 300, dsts, new int[300]));
                assertThrows(IllegalArgumentException.class, () -> c.getAll(Arrays.asList(keys)));
            }
            c.cleanUp();
            assertEquals(0, c.stats().hitCount(), "hits");
            assertEquals(0, c.stats().missCount(), "misses");
            keys[299] = b("k299");
            assertEquals(150, c.getAll(Arrays.asList(keys)).size(), "the cache serves after");
            assertEquals(150, c.stats().hitCount(), "hits");
        }
    }

    /*
     * The same for a key whose serializer throws in a later batch: each
     * batch serialized its own keys, so the first 256 had been read and
     * counted when the 300th threw.
     */
    @Test
    void aBatchRefusedByTheKeySerializerCountsNothing() {
        CacheSerializer<String> refusing = TestSupport.stringSerializer(key -> {
            if (key.equals("bad")) {
                throw new IllegalStateException("refused: " + key);
            }
        }, CacheSerializers.STRING::serializedSize);
        try (LarderCache<String, byte[]> c = LarderCacheBuilder.<String, byte[]>newBuilder()
                .keySerializer(refusing).valueSerializer(CacheSerializers.BYTE_ARRAY).build()) {
            String[] keys = new String[300];
            byte[][] dsts = new byte[300][8];
            for (int i = 0; i < keys.length; i++) {
                keys[i] = "k" + i;
                if (i % 2 == 0) {
                    c.put(keys[i], new byte[8]);
                }
            }
            keys[299] = "bad";
            assertThrows(IllegalStateException.class,
                    () -> c.getAllInto(keys, 300, dsts, new int[300]));
            assertThrows(IllegalStateException.class, () -> c.getAll(Arrays.asList(keys)));
            c.cleanUp();
            assertEquals(0, c.stats().hitCount(), "hits");
            assertEquals(0, c.stats().missCount(), "misses");
            keys[299] = "k299";
            assertEquals(150, c.getAll(Arrays.asList(keys)).size(), "the cache serves after");
            assertEquals(150, c.stats().hitCount(), "hits");
        }
    }

    @Test
    void cleanUpMakesTheSizeExact() {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            for (int round = 1; round <= 10; round++) {
                for (int i = 0; i < 100; i++) {
                    c.put(b("r" + round + "k" + i), new byte[8]);
                }
                c.cleanUp();
                assertEquals(100L * round, c.size());
            }
            for (int i = 0; i < 30; i++) {
                assertTrue(c.remove(b("r1k" + i)));
            }
            c.cleanUp();
            assertEquals(970, c.size());
            c.clear();
            c.cleanUp();
            assertEquals(0, c.size());
            c.put(b("after"), new byte[8]);
            c.cleanUp();
            assertEquals(1, c.size());
        }
    }

    @Test
    void cleanUpInsideAZeroCopyReadIsRefused() {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            c.put(b("k"), new byte[8]);
            RuntimeException[] seen = new RuntimeException[1];
            assertTrue(c.getDirect(b("k"), view -> {
                try {
                    c.cleanUp();
                } catch (RuntimeException e) {
                    seen[0] = e;
                }
            }));
            assertTrue(seen[0] instanceof IllegalStateException, String.valueOf(seen[0]));
        }
    }

    @Test
    void theMemoryAuditAddsUp() {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            byte[] key = new byte[16];
            for (int i = 0; i < 1000; i++) {
                key[0] = (byte) i;
                key[1] = (byte) (i >> 8);
                c.put(key.clone(), new byte[64]);
            }
            c.put(b("large"), new byte[300_000]);
            waitUntil("the size classes account for every mapped byte", () -> {
                LarderStats st = c.stats();
                long classes = 0;
                long used = 0;
                for (SizeClassStats sc : c.sizeClassStats()) {
                    classes += sc.bytes();
                    used += sc.slotsUsed();
                }
                return used == 1000 && st.mappedBytes() == classes + st.get("reserve_bytes")
                        + st.get("returning_bytes") + st.get("large_bytes");
            });
            List<SizeClassStats> classes = c.sizeClassStats();
            assertFalse(classes.isEmpty());
            long slots = 0;
            for (SizeClassStats sc : classes) {
                if (sc.slotsUsed() > 0) {
                    assertEquals(sc.slotsUsed() * sc.slotBytes(), sc.usedBytes());
                    slots += sc.slotsUsed();
                }
            }
            assertEquals(1000, slots);
            assertTrue(c.stats().get("large_bytes") >= 300_000);
        }
    }

    @Test
    void theMxBeanLivesAsLongAsTheCache() throws Exception {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        ObjectName name = new ObjectName("org.larder:type=LarderCache,name=\"stats-test\"");
        LarderCache<byte[], byte[]> c = bytes().jmxName("stats-test").build();
        try {
            c.put(b("k"), b("v"));
            c.get(b("k"));
            c.get(b("none"));
            assertEquals(1L, server.getAttribute(name, "HitCount"));
            assertEquals(1L, server.getAttribute(name, "MissCount"));
            assertEquals(1L, server.getAttribute(name, "PutCount"));
            assertEquals(64L << 20, server.getAttribute(name, "Capacity"));
            assertTrue(server.getAttribute(name, "Counters") != null);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> bytes().jmxName("stats-test").build());
            assertTrue(e.getMessage().contains("stats-test"), e.getMessage());
            assertEquals("v", TestSupport.s(c.get(b("k"))), "the first cache is untouched");
        } finally {
            c.close();
        }
        assertFalse(server.isRegistered(name));
    }

    private static void abandonCache() {
        LarderCache<byte[], byte[]> c = bytes().jmxName("abandoned").build();
        c.put(b("k"), b("v"));
    }

    @Test
    void anUnreachableCacheIsClosedByTheCleaner() throws Exception {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        ObjectName name = new ObjectName("org.larder:type=LarderCache,name=\"abandoned\"");
        abandonCache();
        assertTrue(server.isRegistered(name));
        waitUntil("the Cleaner closes the cache and unregisters its MBean", () -> {
            System.gc();
            return !server.isRegistered(name);
        });
    }
}
