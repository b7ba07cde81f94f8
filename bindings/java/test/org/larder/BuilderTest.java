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

import java.util.Arrays;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The builder's checks, and every option with every operation. */
class BuilderTest {
    @Test
    void settersCheckTheirRanges() {
        LarderCacheBuilder<byte[], byte[]> bld = bytes();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> bld.capacity(1000));
        assertTrue(e.getMessage().contains("65536"), e.getMessage());
        /* Caffeine's maximumSize(0), a cache that keeps nothing, is not offered (docs/java.md). */
        assertThrows(IllegalArgumentException.class, () -> bld.capacity(0));
        e = assertThrows(IllegalArgumentException.class, () -> bld.maxKeyBytes(0));
        assertTrue(e.getMessage().contains("65535"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> bld.maxKeyBytes(65536));
        assertThrows(IllegalArgumentException.class, () -> bld.maxValueBytes(-1));
        assertThrows(IllegalArgumentException.class, () -> bld.maxValueBytes((1 << 30) + 1));
        assertThrows(IllegalArgumentException.class, () -> bld.expectedEntries(-1));
        /* The engine's limit, at the setter: build() refused it with a bare "invalid argument". */
        e = assertThrows(IllegalArgumentException.class,
                () -> bld.expectedEntries(LarderCacheBuilder.MAX_EXPECTED_ENTRIES + 1));
        assertTrue(e.getMessage().contains("1099511627776"), e.getMessage());
        bld.expectedEntries(LarderCacheBuilder.MAX_EXPECTED_ENTRIES);
        assertThrows(IllegalArgumentException.class, () -> bld.defaultTTLmillis(-1));
        assertThrows(IllegalArgumentException.class, () -> bld.writeWaitMillis(-1));
        assertThrows(NullPointerException.class, () -> bld.eviction(null));
        for (int bad : new int[] {0, -1, 3, 6, 128}) {
            e = assertThrows(IllegalArgumentException.class, () -> bld.shards(bad));
            assertTrue(e.getMessage().contains("64"), e.getMessage());
        }
    }

    @Test
    void serializersAreRequired() {
        assertThrows(NullPointerException.class,
                () -> LarderCacheBuilder.<byte[], byte[]>newBuilder()
                        .valueSerializer(CacheSerializers.BYTE_ARRAY).build());
        assertThrows(NullPointerException.class,
                () -> LarderCacheBuilder.<byte[], byte[]>newBuilder()
                        .keySerializer(CacheSerializers.BYTE_ARRAY).build());
    }

    @Test
    void aSettingTheEngineRefusesIsNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> bytes().capacity(Long.MAX_VALUE).build());
        assertTrue(e.getMessage().contains("capacity"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> bytes().expectedEntries(Long.MAX_VALUE).build());
        assertTrue(e.getMessage().contains("expectedEntries"), e.getMessage());
    }

    @Test
    void theLargestKeysAndValuesWork() {
        try (LarderCache<byte[], byte[]> c = bytes().maxKeyBytes(65535).maxValueBytes(1 << 30)
                .capacity(64L << 20).build()) {
            byte[] key = new byte[65535];
            key[65534] = 7;
            byte[] value = new byte[5 << 20];
            value[value.length - 1] = 9;
            c.put(key, value);
            assertArrayEquals(value, c.get(key));
            assertTrue(c.remove(key));
        }
    }

    /** Every policy, with and without a default TTL, and expire-after-access with one. */
    @ParameterizedTest
    @EnumSource(Eviction.class)
    void everyPolicyWithEveryOperation(Eviction eviction) {
        for (long ttl : new long[] {0, 3_600_000}) {
            for (boolean afterAccess : new boolean[] {false, ttl > 0}) {
                for (int shards : new int[] {1, 4}) {
                    try (LarderCache<byte[], byte[]> c = bytes().eviction(eviction)
                            .defaultTTLmillis(ttl).expireAfterAccess(afterAccess)
                            .hashSeed(42).expectedEntries(10).writeWaitMillis(0)
                            .shards(shards).build()) {
                        exercise(c, ttl);
                    }
                }
            }
        }
    }

    /** Four shards' maintainers, four threads, report every removal once. */
    @Test
    void shardsReportEveryRemovalOnce() {
        Map<String, RemovalCause> heard = new ConcurrentHashMap<>();
        AtomicInteger twice = new AtomicInteger();
        Set<Thread> maintainers = ConcurrentHashMap.newKeySet();
        try (LarderCache<String, String> c = LarderCacheBuilder.<String, String>newBuilder()
                .keySerializer(CacheSerializers.STRING).valueSerializer(CacheSerializers.STRING)
                .shards(4).removalListener((k, v, cause) -> {
                    maintainers.add(Thread.currentThread());
                    if (heard.put(k, cause) != null) {
                        twice.incrementAndGet();
                    }
                }).build()) {
            for (int i = 0; i < 2000; i++) {
                c.put("k" + i, "v" + i);
            }
            for (int i = 0; i < 2000; i += 2) {
                assertTrue(c.remove("k" + i));
            }
            c.clear();
            TestSupport.waitUntil("every removal reported", () -> heard.size() == 2000);
            assertEquals(0, twice.get());
            assertEquals(4, maintainers.size(), "each shard's maintainer reports its own keys");
            for (int i = 0; i < 2000; i++) {
                assertEquals(i % 2 == 0 ? RemovalCause.EXPLICIT : RemovalCause.CLEARED,
                        heard.get("k" + i), "k" + i);
            }
            c.cleanUp(); // size() lags the maintainers by a batching window otherwise
            assertEquals(0, c.size());
        }
    }

    private static void exercise(LarderCache<byte[], byte[]> c, long ttl) {
        String what = c.stats().toString();
        for (int i = 0; i < 200; i++) {
            c.put(b("k" + i), b("v" + i));
        }
        assertEquals("v7", s(c.get(b("k7"))), what);
        long left = c.remainingTTLmillis(b("k7"));
        if (ttl == 0) {
            assertEquals(LarderCache.NEVER_EXPIRE, left, what);
        } else {
            assertTrue(left > 0 && left <= ttl, what + ": " + left);
        }
        byte[] dst = new byte[8];
        assertEquals(2, c.getInto(b("k1"), dst));
        assertTrue(c.getDirect(b("k2"), v -> assertEquals('2', v.getByte(1))));
        Map<byte[], byte[]> all = c.getAll(Arrays.asList(b("k3"), b("none")));
        assertEquals(1, all.size());
        assertFalse(c.putIfAbsent(b("k4"), b("x")));
        assertTrue(c.replace(b("k4"), b("x")));
        assertTrue(c.replace(b("k4"), b("x"), b("y")));
        assertTrue(c.addOrReplace(b("k4"), b("y"), b("z")));
        assertTrue(c.touch(b("k4")));
        assertTrue(c.touch(b("k4"), 1, TimeUnit.HOURS));
        assertTrue(c.remove(b("k4"), b("z")));
        assertTrue(c.remove(b("k5")));
        assertNull(c.get(b("k5")));
        c.put(b("t"), b("v"), 10, TimeUnit.MINUTES);
        assertTrue(c.remainingTTLmillis(b("t")) <= 600_000);
        c.put(b("n"), b("v"), LarderCache.NEVER_EXPIRE, TimeUnit.SECONDS);
        assertEquals(LarderCache.NEVER_EXPIRE, c.remainingTTLmillis(b("n")));
        c.clear();
        assertFalse(c.containsKey(b("k7")));
        c.setCapacity(1 << 20);
        assertEquals(1 << 20, c.capacity());
    }

    /** Every policy keeps a cache written far past its capacity within it. */
    @ParameterizedTest
    @EnumSource(Eviction.class)
    void everyPolicyEvicts(Eviction eviction) {
        long capacity = 1 << 20;
        try (LarderCache<byte[], byte[]> c = bytes().eviction(eviction).capacity(capacity)
                .build()) {
            byte[] value = new byte[1000];
            for (int i = 0; i < 10_000; i++) {
                c.put(b("key" + i), value);
            }
            TestSupport.waitUntil("evictions bring used bytes under the capacity",
                    () -> c.memUsed() <= capacity);
            assertTrue(c.stats().evictionCount() > 0);
            assertTrue(c.size() < 10_000);
        }
    }
}
