package org.larder;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.larder.TestSupport.b;
import static org.larder.TestSupport.bytes;
import static org.larder.TestSupport.waitUntil;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Pools: one budget, its split, its bound, and the closing order. */
class PoolTest {
    private static final long MIB = 1L << 20;

    private static LarderPool staticPool(long budget) {
        return LarderPool.builder().budget(budget).controllerIntervalMillis(0).build();
    }

    @Test
    void budgetIsSplitAndGivenBackOnClose() {
        try (LarderPool pool = staticPool(64 * MIB)) {
            LarderCache<byte[], byte[]> a = bytes().pool(pool).build();
            assertSame(pool, a.pool());
            waitUntil("one cache holds the whole budget", () -> a.capacity() == 64 * MIB);
            LarderCache<byte[], byte[]> c = bytes().pool(pool).build();
            waitUntil("two caches hold half each",
                    () -> a.capacity() == 32 * MIB && c.capacity() == 32 * MIB);
            PoolStats st = pool.stats();
            assertEquals(64 * MIB, st.budget());
            assertEquals(2, st.caches());
            assertEquals(64 * MIB, st.assignedBytes());
            assertEquals(64 * MIB / 100 + 2 * 4 * MIB, st.overshootBound());
            c.close();
            waitUntil("the closed cache's share comes back", () -> a.capacity() == 64 * MIB);
            assertEquals(1, pool.stats().caches());
            a.close();
            assertEquals(0, pool.stats().caches());
        }
    }

    /*
     * A consumer or a removal listener of a pooled cache that reads the
     * pool's figures or builds another cache in the pool while another
     * thread closes the cache: the close returns, and so do they. The close
     * held the pool's lock while it waited for the consumer's call (or
     * joined the listener's maintainer), and they waited for that lock. The
     * pool is used once the cache refuses calls (its close has begun), so no
     * timing decides the order.
     */
    @Test
    void aListenerOrConsumerUsingThePoolDoesNotHoldUpAClose() throws Exception {
        for (String from : new String[] {"consumer", "listener"}) {
            /* Closed only once the cache is: a pool close waits for the lock a hung close holds. */
            LarderPool pool = staticPool(16 * MIB);
            AtomicReference<String> inner = new AtomicReference<>();
            AtomicReference<LarderCache<String, String>> other = new AtomicReference<>();
            /* Closed by the test: a consumer may close no cache (it would wait for itself). */
            boolean returned = CloseRaceTest.closeWhileInside(from,
                    TestSupport.strings().pool(pool), self -> {
                        other.set(TestSupport.strings().pool(pool).build());
                        inner.set("caches " + pool.stats().caches());
                    });
            assertTrue(returned, from + ": close() did not return");
            assertEquals("caches 2", inner.get(), from);
            other.get().close();
            pool.close();
        }
    }

    @Test
    void sharesAndWeightReachTheEngine() {
        try (LarderPool pool = staticPool(40 * MIB);
                LarderCache<byte[], byte[]> fixed = bytes().pool(pool).minShare(0.25)
                        .maxShare(0.25).weight(7.5).build();
                LarderCache<byte[], byte[]> rest = bytes().pool(pool).build()) {
            waitUntil("the fixed cache holds a quarter", () -> fixed.capacity() == 10 * MIB
                    && rest.capacity() == 30 * MIB);
            PoolCacheStats ps = fixed.poolStats();
            assertEquals(0.25, ps.minShare());
            assertEquals(0.25, ps.maxShare());
            assertEquals(7.5, ps.weight());
            assertEquals(10 * MIB, ps.target());
            assertEquals(1.0, rest.poolStats().weight());
            assertEquals(fixed.capacity(), ps.capacity());
        }
    }

    @Test
    void closingAPoolWithOpenCachesIsRefused() {
        LarderPool pool = staticPool(16 * MIB);
        LarderCache<byte[], byte[]> c = bytes().pool(pool).build();
        c.put(b("k"), b("v"));
        IllegalStateException e = assertThrows(IllegalStateException.class, pool::close);
        assertTrue(e.getMessage().contains("1 open cache"), e.getMessage());
        assertFalse(pool.isClosed());
        assertArrayEquals(b("v"), c.get(b("k")), "the cache keeps working");
        assertEquals(1, pool.stats().caches());
        c.close();
        pool.close();
        assertTrue(pool.isClosed());
        pool.close(); /* twice: a no-op */
        assertThrows(IllegalStateException.class, pool::stats);
        assertThrows(IllegalStateException.class, () -> bytes().pool(pool).build());
        assertThrows(IllegalStateException.class, c::poolStats);
    }

    @Test
    void settingsAreChecked() {
        assertThrows(IllegalArgumentException.class,
                () -> LarderPool.builder().budget(LarderPool.MIN_BUDGET - 1));
        assertThrows(IllegalArgumentException.class,
                () -> LarderPool.builder().controllerIntervalMillis(-1));
        assertThrows(IllegalArgumentException.class,
                () -> LarderPool.builder().controllerIntervalMillis(60_001));
        assertThrows(IllegalArgumentException.class, () -> bytes().weight(0));
        assertThrows(IllegalArgumentException.class, () -> bytes().weight(Double.NaN));
        assertThrows(IllegalArgumentException.class, () -> bytes().weight(2e9));
        assertThrows(IllegalArgumentException.class, () -> bytes().minShare(-0.1));
        assertThrows(IllegalArgumentException.class, () -> bytes().minShare(Double.NaN));
        assertThrows(IllegalArgumentException.class, () -> bytes().maxShare(0));
        assertThrows(IllegalArgumentException.class, () -> bytes().maxShare(1.5));
        try (LarderPool pool = staticPool(16 * MIB)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> bytes().pool(pool).capacity(1 * MIB).build());
            assertTrue(e.getMessage().contains("minShare = maxShare"), e.getMessage());
            assertThrows(IllegalArgumentException.class,
                    () -> bytes().pool(pool).minShare(0.6).maxShare(0.5).build());
            try (LarderCache<byte[], byte[]> sharded = bytes().pool(pool).shards(4).build()) {
                for (int i = 0; i < 1000; i++) {
                    sharded.put(b("k" + i), b("v" + i));
                }
                for (int i = 0; i < 1000; i++) {
                    assertArrayEquals(b("v" + i), sharded.get(b("k" + i)));
                }
            }
            try (LarderCache<byte[], byte[]> big = bytes().pool(pool).minShare(0.7).build()) {
                e = assertThrows(IllegalArgumentException.class,
                        () -> bytes().pool(pool).minShare(0.4).build());
                assertTrue(e.getMessage().contains("sum to over 1"), e.getMessage());
                assertEquals(1, pool.stats().caches());
                IllegalStateException s = assertThrows(IllegalStateException.class,
                        () -> big.setCapacity(4 * MIB));
                assertTrue(s.getMessage().contains("pool"), s.getMessage());
            }
        }
        try (LarderCache<byte[], byte[]> alone = bytes().build()) {
            assertThrows(IllegalStateException.class, alone::poolStats);
        }
    }

    /** Two caches written far past the budget: the pool's bound holds in every sample. */
    @Test
    void usedBytesStayWithinTheBound() {
        try (LarderPool pool = LarderPool.builder().budget(8 * MIB)
                .controllerIntervalMillis(10).build()) {
            List<LarderCache<byte[], byte[]>> caches = new ArrayList<>();
            try {
                caches.add(bytes().pool(pool).build());
                caches.add(bytes().pool(pool).weight(3).build());
                long bound = 8 * MIB + pool.stats().overshootBound();
                byte[] value = new byte[1000];
                long most = 0;
                for (int i = 0; i < 40_000; i++) {
                    byte[] key = b("key-" + i);
                    caches.get(i & 1).put(key, value);
                    if (i % 500 == 0) {
                        long used = pool.stats().usedBytes();
                        most = Math.max(most, used);
                        assertTrue(used <= bound, "used " + used + " over the bound " + bound);
                    }
                }
                assertTrue(most > 4 * MIB, "the caches were filled: " + most);
                PoolStats st = pool.stats();
                assertTrue(st.usedBytes() <= st.budget() + st.overshootBound());
                assertEquals(8 * MIB, st.budget());
            } finally {
                for (LarderCache<byte[], byte[]> c : caches) {
                    c.close();
                }
            }
        }
    }

    /**
     * Threads opening, using and closing caches in one pool while another
     * keeps closing the pool: each close is refused with
     * IllegalStateException while a cache is open, and once one succeeds,
     * every later build throws IllegalStateException; nothing else happens.
     */
    @Test
    void poolCloseRacesWithCacheOpensAndCloses() throws Exception {
        LarderPool pool = LarderPool.builder().budget(32 * MIB).controllerIntervalMillis(5)
                .build();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < 3; t++) {
            Thread w = new Thread(() -> {
                try {
                    for (int round = 0; round < 50; round++) {
                        LarderCache<byte[], byte[]> c;
                        try {
                            c = bytes().pool(pool).build();
                        } catch (IllegalStateException closed) {
                            assertTrue(pool.isClosed(), closed.getMessage());
                            return;
                        }
                        try (c) {
                            for (int i = 0; i < 200; i++) {
                                c.put(b("k" + i), b("v" + i));
                                assertArrayEquals(b("v" + i), c.get(b("k" + i)));
                            }
                            c.poolStats();
                        }
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            });
            workers.add(w);
            w.start();
        }
        while (!pool.isClosed()) {
            try {
                pool.close();
            } catch (IllegalStateException e) {
                assertTrue(e.getMessage().contains("open cache"), e.getMessage());
                Thread.yield();
            }
        }
        for (Thread w : workers) {
            w.join();
        }
        if (failure.get() != null) {
            throw new AssertionError(failure.get());
        }
        assertThrows(IllegalStateException.class, () -> bytes().pool(pool).build());
    }
}
