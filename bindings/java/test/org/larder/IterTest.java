package org.larder;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.larder.TestSupport.b;
import static org.larder.TestSupport.bytes;
import static org.larder.TestSupport.s;
import static org.larder.TestSupport.strings;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** keyIterator and entryIterator: each live key once, cursors freed in every order. */
class IterTest {
    @Test
    void everyEntryOnce() {
        try (LarderCache<String, String> c = strings().build()) {
            for (int i = 0; i < 10_000; i++) {
                c.put("key-" + i, "value-" + i);
            }
            for (int i = 0; i < 10_000; i += 10) {
                c.remove("key-" + i);
            }
            Map<String, String> seen = new HashMap<>();
            try (CloseableIterator<Map.Entry<String, String>> it = c.entryIterator()) {
                while (it.hasNext()) {
                    Map.Entry<String, String> e = it.next();
                    assertEquals(null, seen.put(e.getKey(), e.getValue()), "twice: " + e.getKey());
                }
                assertThrows(NoSuchElementException.class, it::next);
            }
            assertEquals(9_000, seen.size());
            for (int i = 0; i < 10_000; i++) {
                assertEquals(i % 10 == 0 ? null : "value-" + i, seen.get("key-" + i));
            }
            Set<String> keys = new HashSet<>();
            CloseableIterator<String> it = c.keyIterator();
            it.forEachRemaining(keys::add);
            assertEquals(seen.keySet(), keys);
            assertFalse(it.hasNext(), "an iterator at its end stays there");
            it.close();
        }
    }

    @Test
    void emptyCacheAndEarlyClose() {
        try (LarderCache<byte[], byte[]> c = bytes().build()) {
            try (CloseableIterator<byte[]> it = c.keyIterator()) {
                assertFalse(it.hasNext());
                assertThrows(NoSuchElementException.class, it::next);
            }
            c.put(b("a"), b("1"));
            c.put(b("b"), b("2"));
            CloseableIterator<byte[]> it = c.keyIterator();
            assertTrue(it.hasNext());
            it.next();
            it.close();
            assertFalse(it.hasNext(), "closed");
            it.close();
        }
    }

    /** Closing the cache frees the cursors left open; they then throw IllegalStateException. */
    @Test
    void closingTheCacheFreesOpenIterators() {
        LarderCache<byte[], byte[]> c = bytes().build();
        for (int i = 0; i < 1000; i++) {
            c.put(b("k" + i), b("v" + i));
        }
        CloseableIterator<byte[]> started = c.keyIterator();
        assertTrue(started.hasNext());
        started.next();
        CloseableIterator<Map.Entry<byte[], byte[]>> idle = c.entryIterator();
        for (int i = 0; i < 50; i++) {
            c.keyIterator(); /* dropped unclosed */
        }
        c.close();
        assertThrows(IllegalStateException.class, () -> {
            while (started.hasNext()) {
                started.next();
            }
        });
        assertThrows(IllegalStateException.class, idle::hasNext);
        /* Refused again, as every call on a closed cache (the Javadoc); once
         * closed itself, it is done. ContractTest.iteratorOfAClosedCacheKeepsThrowing. */
        assertThrows(IllegalStateException.class, idle::hasNext);
        started.close();
        idle.close();
        assertFalse(idle.hasNext());
        assertThrows(IllegalStateException.class, c::keyIterator);
    }

    /**
     * Writers churn other keys (and overwrite the stable ones with the same
     * value) while a reader iterates: every stable key comes back exactly
     * once, with its value, and the cache is closed by the end under an
     * open iterator without a crash.
     */
    @Test
    void stableKeysOnceUnderConcurrentWrites() throws Exception {
        try (LarderCache<byte[], byte[]> c = bytes().capacity(64L << 20).build()) {
            int stable = 20_000;
            for (int i = 0; i < stable; i++) {
                c.put(b("s" + i), b("v" + i));
            }
            AtomicBoolean stop = new AtomicBoolean();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread writer = new Thread(() -> {
                try {
                    for (int i = 0; !stop.get(); i++) {
                        c.put(b("x" + (i % 50_000)), b("churn" + i));
                        if (i % 3 == 0) {
                            c.remove(b("x" + ((i * 7) % 50_000)));
                        }
                        c.put(b("s" + (i % stable)), b("v" + (i % stable)));
                    }
                } catch (Throwable e) {
                    failure.set(e);
                }
            });
            writer.start();
            try {
                for (int round = 0; round < 3; round++) {
                    Set<String> seen = new HashSet<>();
                    try (CloseableIterator<Map.Entry<byte[], byte[]>> it = c.entryIterator()) {
                        while (it.hasNext()) {
                            Map.Entry<byte[], byte[]> e = it.next();
                            String k = s(e.getKey());
                            assertTrue(seen.add(k), "twice: " + k);
                            if (k.startsWith("s")) {
                                assertEquals("v" + k.substring(1), s(e.getValue()));
                            }
                        }
                    }
                    for (int i = 0; i < stable; i++) {
                        assertTrue(seen.contains("s" + i), "missing s" + i);
                    }
                }
            } finally {
                stop.set(true);
                writer.join();
            }
            if (failure.get() != null) {
                throw new AssertionError(failure.get());
            }
        }
    }

    /**
     * Threads open, walk and close iterators while the cache is closed
     * under them: each sees entries, then only IllegalStateException; no
     * crash, no other exception.
     */
    @Test
    void closeRacesWithIterators() throws Exception {
        for (int round = 0; round < 5; round++) {
            LarderCache<byte[], byte[]> c = bytes().build();
            for (int i = 0; i < 5000; i++) {
                c.put(b("k" + i), b("v" + i));
            }
            AtomicReference<Throwable> failure = new AtomicReference<>();
            AtomicBoolean[] refused = new AtomicBoolean[3];
            AtomicInteger walking = new AtomicInteger();
            Thread[] walkers = new Thread[3];
            for (int t = 0; t < walkers.length; t++) {
                AtomicBoolean mine = refused[t] = new AtomicBoolean();
                walkers[t] = new Thread(() -> {
                    try {
                        for (boolean first = true;; first = false) {
                            try (CloseableIterator<Map.Entry<byte[], byte[]>> it =
                                    c.entryIterator()) {
                                for (int n = 0; n < 100 && it.hasNext(); n++) {
                                    Map.Entry<byte[], byte[]> e = it.next();
                                    assertEquals("v" + s(e.getKey()).substring(1),
                                            s(e.getValue()));
                                }
                            }
                            if (first) {
                                walking.incrementAndGet();
                            }
                        }
                    } catch (IllegalStateException closed) {
                        mine.set(true);
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                });
                walkers[t].start();
            }
            TestSupport.waitUntil("every walker has walked once", () -> walking.get() == 3);
            c.close();
            for (Thread w : walkers) {
                w.join();
            }
            if (failure.get() != null) {
                throw new AssertionError(failure.get());
            }
            for (AtomicBoolean r : refused) {
                assertTrue(r.get(), "every walker ended on IllegalStateException");
            }
        }
    }
}
