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

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Time to live, driven by a ManualClock so that no result depends on timing. */
class TtlTest {
    /** Every read agrees on whether k is there. */
    private static void assertPresent(LarderCache<byte[], byte[]> c, String key, boolean present) {
        byte[] k = b(key);
        assertEquals(present, c.containsKey(k), key);
        assertEquals(present, c.get(k) != null, key);
        assertEquals(present, c.getInto(k, new byte[64]) >= 0, key);
        assertEquals(present, c.getDirect(k, v -> { }), key);
        assertEquals(present, !c.getAll(Arrays.asList(k)).isEmpty(), key);
        int[] len = new int[1];
        c.getAllInto(new byte[][] {k}, 1, new byte[][] {new byte[64]}, len);
        assertEquals(present, len[0] >= 0, key);
        assertEquals(present, c.remainingTTLmillis(k) != LarderCache.NOT_FOUND, key);
    }

    @Test
    void anEntryLivesUntilItsDeadlineAndNotAMillisecondMore() {
        ManualClock clock = new ManualClock(1000);
        try (LarderCache<byte[], byte[]> c = bytes().clock(clock).build()) {
            c.put(b("k"), b("v"), 100, TimeUnit.MILLISECONDS);
            assertEquals(100, c.remainingTTLmillis(b("k")));
            clock.set(1050);
            assertEquals(50, c.remainingTTLmillis(b("k")));
            clock.set(1099);
            assertPresent(c, "k", true);
            assertEquals(1, c.remainingTTLmillis(b("k")));
            clock.set(1100);
            assertPresent(c, "k", false);
        }
    }

    @Test
    void unitsRoundUpToWholeMilliseconds() {
        ManualClock clock = new ManualClock(0);
        try (LarderCache<byte[], byte[]> c = bytes().clock(clock).build()) {
            c.put(b("ns"), b("v"), 1, TimeUnit.NANOSECONDS);
            assertEquals(1, c.remainingTTLmillis(b("ns")));
            c.put(b("us"), b("v"), 1500, TimeUnit.MICROSECONDS);
            assertEquals(2, c.remainingTTLmillis(b("us")));
            c.put(b("s"), b("v"), 2, TimeUnit.SECONDS);
            assertEquals(2000, c.remainingTTLmillis(b("s")));
            c.put(b("d"), b("v"), 3, TimeUnit.DAYS);
            assertEquals(3 * 86_400_000L, c.remainingTTLmillis(b("d")));
            c.put(b("never"), b("v"), LarderCache.NEVER_EXPIRE, TimeUnit.NANOSECONDS);
            assertEquals(LarderCache.NEVER_EXPIRE, c.remainingTTLmillis(b("never")));
            c.put(b("huge"), b("v"), Long.MAX_VALUE / 2, TimeUnit.DAYS);
            assertEquals(LarderCache.NEVER_EXPIRE, c.remainingTTLmillis(b("huge")),
                    "a TTL past Long.MAX_VALUE ms saturates to never");
        }
    }

    /*
     * defaultTTLmillis(NEVER_EXPIRE) is no deadline, as a put's NEVER_EXPIRE:
     * it was passed on as a lifetime of Long.MAX_VALUE ms, whose deadline a
     * clock at Long.MAX_VALUE reached (the entry expired), while
     * remainingTTLmillis said NEVER_EXPIRE until then.
     */
    @Test
    void aDefaultTtlOfNeverExpireGivesNoDeadline() {
        for (boolean afterAccess : new boolean[] {false, true}) {
            ManualClock clock = new ManualClock(0);
            try (LarderCache<byte[], byte[]> c = bytes().clock(clock)
                    .defaultTTLmillis(LarderCache.NEVER_EXPIRE).expireAfterAccess(afterAccess)
                    .build()) {
                c.put(b("d"), b("v"));
                c.put(b("own"), b("v"), LarderCache.NEVER_EXPIRE, TimeUnit.MILLISECONDS);
                clock.set(Long.MAX_VALUE - 1);
                assertEquals(LarderCache.NEVER_EXPIRE, c.remainingTTLmillis(b("d")));
                clock.set(Long.MAX_VALUE);
                assertPresent(c, "own", true);
                assertPresent(c, "d", true);
                assertEquals(LarderCache.NEVER_EXPIRE, c.remainingTTLmillis(b("d")));
            }
        }
    }

    @Test
    void theDefaultTtlAppliesToWritesWithoutOne() {
        ManualClock clock = new ManualClock(0);
        try (LarderCache<byte[], byte[]> c = bytes().clock(clock).defaultTTLmillis(500).build()) {
            c.put(b("d"), b("v"));
            assertTrue(c.putIfAbsent(b("p"), b("v")));
            c.put(b("own"), b("v"), 2, TimeUnit.SECONDS);
            c.put(b("never"), b("v"), LarderCache.NEVER_EXPIRE, TimeUnit.MILLISECONDS);
            assertEquals(500, c.remainingTTLmillis(b("d")));
            assertEquals(500, c.remainingTTLmillis(b("p")));
            clock.set(500);
            assertPresent(c, "d", false);
            assertPresent(c, "p", false);
            assertPresent(c, "own", true);
            assertPresent(c, "never", true);
            assertEquals(LarderCache.NEVER_EXPIRE, c.remainingTTLmillis(b("never")));
        }
    }

    @Test
    void touchGivesANewLifetime() {
        ManualClock clock = new ManualClock(0);
        try (LarderCache<byte[], byte[]> c = bytes().clock(clock).defaultTTLmillis(300).build()) {
            c.put(b("k"), b("v"), 100, TimeUnit.MILLISECONDS);
            clock.set(50);
            assertTrue(c.touch(b("k"), 1, TimeUnit.SECONDS));
            assertEquals(1000, c.remainingTTLmillis(b("k")));
            assertTrue(c.touch(b("k")));
            assertEquals(300, c.remainingTTLmillis(b("k")), "touch(key): the default TTL");
            assertTrue(c.touch(b("k"), LarderCache.NEVER_EXPIRE, TimeUnit.SECONDS));
            assertEquals(LarderCache.NEVER_EXPIRE, c.remainingTTLmillis(b("k")));
            assertFalse(c.touch(b("absent"), 1, TimeUnit.SECONDS));
            clock.advance(1_000_000);
            assertPresent(c, "k", true);
        }
    }

    @Test
    void anExpiredEntryIsAbsentForConditionalWrites() {
        ManualClock clock = new ManualClock(0);
        try (LarderCache<byte[], byte[]> c = bytes().clock(clock).build()) {
            c.put(b("k"), b("old"), 10, TimeUnit.MILLISECONDS);
            clock.set(10);
            assertFalse(c.replace(b("k"), b("x")));
            assertFalse(c.replace(b("k"), b("old"), b("x")));
            assertFalse(c.remove(b("k")));
            assertFalse(c.touch(b("k")));
            assertTrue(c.putIfAbsent(b("k"), b("new")));
            assertArrayEquals(b("new"), c.get(b("k")));
            assertEquals(LarderCache.NEVER_EXPIRE, c.remainingTTLmillis(b("k")));
        }
    }

    @Test
    void readsUnderExpireAfterAccessExtendTheDeadline() {
        ManualClock clock = new ManualClock(0);
        try (LarderCache<byte[], byte[]> c = bytes().clock(clock).defaultTTLmillis(1000)
                .expireAfterAccess(true).build()) {
            byte[] k = b("k");
            c.put(k, b("v"));
            c.put(b("unread"), b("v"));
            // Each value read moves the deadline to its time + the TTL before it
            // returns (larder.h: the slack, 1000 / 64 ms, is far below the 100 ms
            // steps, so every read stores its deadline).
            List<Runnable> reads = Arrays.asList(
                    () -> assertEquals("v", s(c.get(k))),
                    () -> assertEquals(1, c.getInto(k, new byte[8])),
                    () -> assertEquals(1, c.getInto(k, ByteBuffer.allocate(8))),
                    () -> assertTrue(c.getDirect(k, v -> { })),
                    () -> assertEquals(1, c.getAll(Arrays.asList(k)).size()),
                    () -> assertEquals(1, c.getAllInto(new byte[][] {k}, 1,
                            new byte[][] {new byte[8]}, new int[1])));
            long now = 0;
            for (Runnable read : reads) {
                now += 100;
                clock.set(now);
                read.run();
                assertEquals(1000, c.remainingTTLmillis(k), "a read at " + now);
            }
            // Presence, the remaining TTL and a read into too short a buffer read
            // no value: they extend nothing.
            clock.set(now + 500);
            assertTrue(c.containsKey(k));
            assertEquals(500, c.remainingTTLmillis(k));
            assertEquals(1, c.getInto(k, new byte[0]), "the length; nothing copied");
            assertEquals(500, c.remainingTTLmillis(k));
            clock.set(now + 1000);
            assertPresent(c, "k", false);
            assertPresent(c, "unread", false);
        }
    }

    /*
     * Under expireAfterAccess a putIfAbsent that finds the key is an access
     * as a get is (Caffeine's asMap().putIfAbsent: an access, not a hit), so
     * for each kind of entry, "g.." read by get and "p.." found by
     * putIfAbsent, written alike, end with the same deadline: the default
     * TTL from the access; an explicit longer one kept; none kept, also for
     * an entry within 8 bytes of the entry limit. The binding touched
     * instead: it cut the longer TTL to the default, gave the entry without
     * a deadline one, and threw at the entry limit (the deadline's 8 bytes
     * refused) for a key that was present.
     */
    @Test
    void aPutIfAbsentThatFindsTheKeyAccessesItAsAGetDoes() {
        long capacity = 1 << 20;
        ManualClock clock = new ManualClock(0);
        try (LarderCache<byte[], byte[]> c = bytes().clock(clock).capacity(capacity)
                .maxValueBytes(1 << 20).defaultTTLmillis(1000).expireAfterAccess(true).build()) {
            // the largest value stored without a deadline: a deadline's 8 bytes do not fit
            int lo = 1, hi = (int) capacity / 8;
            while (hi - lo > 1) {
                int mid = (lo + hi) >>> 1;
                try {
                    c.put(b("g3"), new byte[mid], LarderCache.NEVER_EXPIRE, TimeUnit.SECONDS);
                    lo = mid;
                } catch (IllegalArgumentException e) {
                    hi = mid;
                }
            }
            long hour = TimeUnit.HOURS.toMillis(1);
            long[] ttls = {0, hour, LarderCache.NEVER_EXPIRE, LarderCache.NEVER_EXPIRE};
            int[] lengths = {1, 1, 1, lo};
            long[] expected = {1000, hour - 600, LarderCache.NEVER_EXPIRE, LarderCache.NEVER_EXPIRE};
            for (int kind = 0; kind < ttls.length; kind++) {
                byte[] g = b("g" + kind), p = b("p" + kind), v = new byte[lengths[kind]];
                for (byte[] k : Arrays.asList(g, p)) {
                    if (ttls[kind] == 0) {
                        c.put(k, v);
                    } else {
                        c.put(k, v, ttls[kind], TimeUnit.MILLISECONDS);
                    }
                }
                clock.advance(600);
                String at = "kind " + kind + " (ttl " + ttls[kind] + ", " + lengths[kind] + " bytes)";
                assertEquals(lengths[kind], c.get(g).length, at);
                assertFalse(c.putIfAbsent(p, b("other")), at + ": present, not stored");
                assertEquals(expected[kind], c.remainingTTLmillis(g), at + ": the get's deadline");
                assertEquals(expected[kind], c.remainingTTLmillis(p), at + ": the putIfAbsent's");
                assertEquals(lengths[kind], c.get(p).length, at + ": the value kept");
            }
            assertThrows(IllegalArgumentException.class, () -> c.touch(b("p3")),
                    "a touch of the last kind is refused: the deadline's 8 bytes do not fit");
        }
    }

    /*
     * Within a read's slack (TTL / 64, larder.h) a get leaves a deadline
     * where it is, and so must a putIfAbsent that finds the key. The binding
     * looked (larder_ttl_remaining) and then touched when less than a full
     * TTL was left: it moved the deadline to 1000 ms where the get's stayed
     * at 990 (now one larder_access, the get's own rule).
     */
    @Test
    void aPutIfAbsentWithinTheReadsSlackMovesNothingAsAGet() {
        ManualClock clock = new ManualClock(0);
        try (LarderCache<byte[], byte[]> c = bytes().clock(clock).defaultTTLmillis(1000)
                .expireAfterAccess(true).build()) {
            c.put(b("g"), b("v"));
            c.put(b("p"), b("v"));
            clock.advance(10);
            assertEquals("v", TestSupport.s(c.get(b("g"))));
            assertFalse(c.putIfAbsent(b("p"), b("other")));
            assertEquals(990, c.remainingTTLmillis(b("g")), "the get's deadline");
            assertEquals(990, c.remainingTTLmillis(b("p")), "the putIfAbsent's");
        }
    }

    @Test
    void aManualClockNeverGoesBackwards() {
        ManualClock clock = new ManualClock(100);
        assertEquals(100, clock.millis());
        assertThrows(IllegalArgumentException.class, () -> clock.set(99));
        assertThrows(IllegalArgumentException.class, () -> clock.advance(-1));
        assertThrows(IllegalArgumentException.class, () -> new ManualClock(-1));
        assertThrows(IllegalArgumentException.class, () -> clock.advance(Long.MAX_VALUE));
        assertEquals(150, clock.advance(50));
        clock.set(150);
        assertEquals(150, clock.millis());
    }

    /*
     * Two threads advancing one clock near Long.MAX_VALUE at once: one fits,
     * the other is refused, and the clock never passes the top. advance
     * checked the room and then added in a second step, so both threads
     * could pass the check and carry the clock past Long.MAX_VALUE (to
     * negative times). Each round starts a fresh clock 10 ms below the top
     * and releases both threads, spinning rather than parked so that their
     * advances overlap, each by 6 ms.
     */
    @Test
    void concurrentAdvancesNearTheTopNeverPassIt() throws Exception {
        int rounds = 20_000;
        ManualClock[] clocks = new ManualClock[rounds];
        for (int r = 0; r < rounds; r++) {
            clocks[r] = new ManualClock(Long.MAX_VALUE - 10);
        }
        boolean[][] fitted = new boolean[2][rounds];
        SpinBarrier barrier = new SpinBarrier(2);
        List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
        Thread[] threads = new Thread[2];
        for (int t = 0; t < 2; t++) {
            boolean[] mine = fitted[t];
            threads[t] = new Thread(() -> {
                try {
                    for (int r = 0; r < rounds; r++) {
                        barrier.await();
                        try {
                            assertEquals(Long.MAX_VALUE - 4, clocks[r].advance(6));
                            mine[r] = true;
                        } catch (IllegalArgumentException refused) {
                            /* the clock had no room left: what the other must get */
                        }
                    }
                } catch (Throwable e) {
                    failures.add(e);
                    barrier.abandon();
                }
            });
            threads[t].start();
        }
        for (Thread th : threads) {
            th.join();
        }
        assertEquals(List.of(), failures);
        for (int r = 0; r < rounds; r++) {
            assertTrue(fitted[0][r] != fitted[1][r], "one advance fits in round " + r);
            assertEquals(Long.MAX_VALUE - 4, clocks[r].millis(), "the clock after round " + r);
        }
    }

    /* A barrier whose waiters spin (yielding now and then), so that they
     * leave it within nanoseconds of each other; abandon() lets them out
     * when a party failed. */
    private static final class SpinBarrier {
        private final int parties;
        private final AtomicInteger arrived = new AtomicInteger();
        private volatile boolean abandoned;

        SpinBarrier(int parties) {
            this.parties = parties;
        }

        void await() {
            int target = (arrived.incrementAndGet() + parties - 1) / parties * parties;
            for (int spins = 1; arrived.get() < target; spins++) {
                if (abandoned) {
                    throw new IllegalStateException("the barrier's other party failed");
                }
                if (spins % 1024 == 0) {
                    Thread.yield();
                } else {
                    Thread.onSpinWait();
                }
            }
        }

        void abandon() {
            abandoned = true;
        }
    }

    @Test
    void oneClockDrivesSeveralCaches() {
        ManualClock clock = new ManualClock(0);
        try (LarderCache<byte[], byte[]> a = bytes().clock(clock).build();
                LarderCache<String, String> b = TestSupport.strings().clock(clock).build()) {
            a.put(b("k"), b("v"), 10, TimeUnit.MILLISECONDS);
            b.put("k", "v", 20, TimeUnit.MILLISECONDS);
            clock.set(15);
            assertNull(a.get(b("k")));
            assertEquals("v", b.get("k"));
            clock.set(20);
            assertNull(b.get("k"));
        }
    }
}
