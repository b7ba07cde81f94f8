package org.larder;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.larder.TestSupport.waitUntil;

import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The removal listener: every cause, its thread, and its failures. */
class ListenerTest {
    private static final class Event {
        final String key;
        final String value;
        final RemovalCause cause;
        final Thread thread;

        Event(String key, String value, RemovalCause cause) {
            this.key = key;
            this.value = value;
            this.cause = cause;
            this.thread = Thread.currentThread();
        }

        @Override
        public String toString() {
            return key + "=" + value + ":" + cause;
        }
    }

    private static List<Event> of(Queue<Event> events, RemovalCause cause) {
        List<Event> l = new ArrayList<>();
        for (Event e : events) {
            if (e.cause == cause) {
                l.add(e);
            }
        }
        return l;
    }

    @Test
    void everyCauseReachesTheListenerOnTheMaintainer() {
        Queue<Event> events = new ConcurrentLinkedQueue<>();
        ManualClock clock = new ManualClock(0);
        try (LarderCache<String, String> c = TestSupport.strings().clock(clock)
                .removalListener((k, v, cause) -> events.add(new Event(k, v, cause))).build()) {
            c.put("r", "1");
            c.put("r", "2");
            c.replace("r", "3");
            c.replace("r", "3", "4");
            c.put("x", "gone");
            c.remove("x");
            c.put("y", "gone too");
            c.remove("y", "gone too");
            c.put("t", "short", 10, TimeUnit.MILLISECONDS);
            clock.set(11);
            waitUntil("REPLACED x3, EXPLICIT x2, EXPIRED x1", () ->
                    of(events, RemovalCause.REPLACED).size() == 3
                    && of(events, RemovalCause.EXPLICIT).size() == 2
                    && of(events, RemovalCause.EXPIRED).size() == 1);
            assertEquals("[r=1:REPLACED, r=2:REPLACED, r=3:REPLACED]",
                    of(events, RemovalCause.REPLACED).toString());
            assertEquals("[x=gone:EXPLICIT, y=gone too:EXPLICIT]",
                    of(events, RemovalCause.EXPLICIT).toString());
            assertEquals("[t=short:EXPIRED]", of(events, RemovalCause.EXPIRED).toString());
            c.put("a", "1");
            c.put("b", "2");
            c.clear();
            waitUntil("CLEARED x3 (a, b and r)", () -> of(events, RemovalCause.CLEARED).size() == 3);
            for (Event e : events) {
                assertEquals("larder-maintainer", e.thread.getName());
                assertTrue(e.thread.isDaemon());
            }
            LarderStats st = c.stats();
            assertEquals(3, st.get("replacements"));
            assertEquals(2, st.removeCount());
            assertEquals(1, st.expireCount());
            assertEquals(3, st.get("cleared"));
        }
    }

    /* As Caffeine's invalidateAll: past its deadline at the clear, EXPIRED;
     * live then, CLEARED, even when its deadline passes before the walk. */
    @Test
    void clearReportsExpiredEntriesAsExpired() {
        Queue<Event> events = new ConcurrentLinkedQueue<>();
        ManualClock clock = new ManualClock(0);
        try (LarderCache<String, String> c = TestSupport.strings().clock(clock)
                .removalListener((k, v, cause) -> events.add(new Event(k, v, cause))).build()) {
            for (int i = 0; i < 500; i++) {
                c.put("short" + i, "v", 10, TimeUnit.MILLISECONDS);
                c.put("long" + i, "v", 1, TimeUnit.HOURS);
                c.put("none" + i, "v");
            }
            c.cleanUp();
            clock.set(20);
            c.clear();
            c.cleanUp();
            assertEquals(1500, events.size());
            for (Event e : events) {
                assertEquals(e.key.startsWith("short") ? RemovalCause.EXPIRED : RemovalCause.CLEARED,
                        e.cause, e.toString());
            }
            events.clear();
            c.put("later", "v", 10, TimeUnit.MILLISECONDS);
            c.cleanUp();
            c.clear();
            clock.set(40);
            c.cleanUp();
            assertEquals("[later=v:CLEARED]", events.toString());
            assertEquals(500, c.stats().expireCount());
            assertEquals(1001, c.stats().get("cleared"));
        }
    }

    @Test
    void evictionsAreReported() {
        AtomicInteger evicted = new AtomicInteger();
        try (LarderCache<String, String> c = TestSupport.strings().capacity(1 << 20)
                .maxValueBytes(4096).removalListener((k, v, cause) -> {
                    if (cause == RemovalCause.EVICTED) {
                        evicted.incrementAndGet();
                    }
                }).build()) {
            String value = new String(new char[2000]).replace('\0', 'v');
            for (int i = 0; i < 2000; i++) {
                c.put("k" + i, value);
            }
            waitUntil("the listener hears every eviction the stats count",
                    () -> evicted.get() > 0 && evicted.get() == c.stats().evictionCount()
                            && c.memUsed() <= c.capacity());
        }
    }

    @Test
    void aThrowingListenerIsCountedAndTheMaintainerGoesOn() {
        AtomicInteger calls = new AtomicInteger();
        try (LarderCache<String, String> c = TestSupport.strings()
                .removalListener((k, v, cause) -> {
                    calls.incrementAndGet();
                    if (k.startsWith("bad")) {
                        throw new IllegalStateException("listener failure for " + k);
                    }
                }).build()) {
            for (int i = 0; i < 10; i++) {
                c.put("bad" + i, "v");
                c.remove("bad" + i);
            }
            c.put("good", "v");
            c.remove("good");
            waitUntil("11 calls, 10 failures counted",
                    () -> calls.get() == 11 && c.stats().listenerFailures() == 10);
            c.put("after", "v");
            c.remove("after");
            waitUntil("the maintainer still runs the listener", () -> calls.get() == 12);
        }
    }

    @Test
    void aListenerMayReadAndWriteButNotCloseItsCache() {
        AtomicReference<LarderCache<String, String>> self = new AtomicReference<>();
        Queue<String> seen = new ConcurrentLinkedQueue<>();
        try (LarderCache<String, String> c = TestSupport.strings().removalListener((k, v, cause) -> {
            LarderCache<String, String> me = self.get();
            if (!k.equals("trigger")) {
                return;
            }
            seen.add("read " + me.get("other"));
            try {
                me.put("written", "by the listener");
                seen.add("write ok");
            } catch (LarderBusyException e) {
                seen.add("write busy");
            }
            try {
                me.close();
                seen.add("closed!");
            } catch (IllegalStateException e) {
                seen.add("close refused");
            }
        }).build()) {
            self.set(c);
            c.put("other", "o");
            c.put("trigger", "t");
            c.remove("trigger");
            waitUntil("the listener ran", () -> seen.size() == 3);
            List<String> got = new ArrayList<>(seen);
            assertEquals("read o", got.get(0));
            assertTrue(got.get(1).startsWith("write "), got.toString());
            assertEquals("close refused", got.get(2));
            assertEquals("o", c.get("other"), "the cache is still open");
        }
    }

    /*
     * cleanUp() where waiting for a maintainer could deadlock: inside a
     * removal listener (its own cache's or another's) and inside a
     * DirectValueConsumer; refused with a message that says so. It gave the
     * engine's generic text for the code, which speaks of pools ("the pool
     * is closed or still has open caches").
     */
    @Test
    void cleanUpInsideAListenerOrAConsumerIsRefusedByName() {
        Queue<String> seen = new ConcurrentLinkedQueue<>();
        AtomicReference<LarderCache<String, String>> self = new AtomicReference<>();
        try (LarderCache<String, String> other = TestSupport.strings().build();
                LarderCache<String, String> c = TestSupport.strings().removalListener((k, v, cause) -> {
                    for (LarderCache<String, String> target : java.util.Arrays.asList(self.get(), other)) {
                        try {
                            target.cleanUp();
                            seen.add("cleaned up");
                        } catch (IllegalStateException e) {
                            seen.add(e.getMessage());
                        }
                    }
                }).build()) {
            self.set(c);
            c.put("k", "v");
            c.remove("k");
            waitUntil("the listener ran", () -> seen.size() == 2);
            c.put("k", "v");
            c.getDirect("k", view -> {
                try {
                    c.cleanUp();
                    seen.add("cleaned up");
                } catch (IllegalStateException e) {
                    seen.add(e.getMessage());
                }
            });
            assertEquals(3, seen.size());
            for (String message : seen) {
                assertTrue(message.contains("cleanUp() inside a removal listener"), message);
            }
        }
    }

    @Test
    void closingFromTheListenerOfAnotherCacheWorks() {
        LarderCache<String, String> victim = TestSupport.strings().build();
        AtomicReference<String> result = new AtomicReference<>();
        try (LarderCache<String, String> c = TestSupport.strings().removalListener((k, v, cause) -> {
            victim.close();
            result.set("closed");
        }).build()) {
            c.put("k", "v");
            c.remove("k");
            waitUntil("the listener closed the other cache", () -> result.get() != null);
            try {
                victim.get("k");
            } catch (IllegalStateException e) {
                result.set("refused after close");
            }
            assertEquals("refused after close", result.get());
        }
    }
}
