package org.larder;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.larder.TestSupport.b;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * close() racing with readers and writers on other threads: nothing may
 * crash the JVM, and the only exception the others may see is
 * IllegalStateException, from the moment close starts, on every call after.
 */
class CloseRaceTest {
    private static final int KEYS = 64;

    /** Runs random operations until the cache refuses one; returns the ops done. */
    private static long hammer(LarderCache<byte[], byte[]> c, long seed, AtomicLong ops) {
        byte[][] keys = new byte[KEYS][];
        for (int i = 0; i < KEYS; i++) {
            keys[i] = b("key" + i);
        }
        byte[] value = new byte[100];
        byte[] dst = new byte[100];
        ByteBuffer bb = ByteBuffer.allocateDirect(100);
        byte[][] dsts = {new byte[100], new byte[100], new byte[100], new byte[100]};
        int[] lens = new int[4];
        DirectValueConsumer reader = v -> v.getLong(0);
        long rng = seed | 1;
        long done = 0;
        for (;;) {
            rng ^= rng << 13;
            rng ^= rng >>> 7;
            rng ^= rng << 17;
            byte[] k = keys[(int) ((rng >>> 8) % KEYS)];
            try {
                switch ((int) ((rng >>> 32) % 12)) {
                case 0:
                    c.put(k, value);
                    break;
                case 1:
                    c.get(k);
                    break;
                case 2:
                    c.getInto(k, dst);
                    break;
                case 3:
                    bb.clear();
                    c.getInto(k, bb);
                    break;
                case 4:
                    c.getDirect(k, reader);
                    break;
                case 5:
                    c.getAllInto(keys, 4, dsts, lens);
                    break;
                case 6:
                    c.remove(k);
                    break;
                case 7:
                    c.replace(k, value, value);
                    break;
                case 8:
                    c.put(k, value, 1, TimeUnit.HOURS);
                    break;
                case 9:
                    c.containsKey(k);
                    break;
                case 10:
                    c.touch(k);
                    break;
                default:
                    c.stats();
                    break;
                }
            } catch (IllegalStateException closed) {
                try {
                    c.get(k);
                } catch (IllegalStateException again) {
                    return done;
                }
                throw new AssertionError("a call succeeded after one was refused as closed");
            }
            done++;
            ops.incrementAndGet();
        }
    }

    @Test
    void closeRacingWithReadersAndWriters() throws Exception {
        int threads = 4;
        int rounds = 200;
        Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
        long total = 0;
        for (int round = 0; round < rounds; round++) {
            LarderCache<byte[], byte[]> c = TestSupport.bytes().build();
            AtomicLong ops = new AtomicLong();
            List<Thread> workers = new ArrayList<>();
            long[] done = new long[threads];
            for (int t = 0; t < threads; t++) {
                int slot = t;
                long seed = round * 1000L + t;
                Thread w = new Thread(() -> {
                    try {
                        done[slot] = hammer(c, seed, ops);
                    } catch (Throwable e) {
                        failures.add(e);
                    }
                });
                workers.add(w);
                w.start();
            }
            long target = 200L * (round % 10);
            TestSupport.waitUntil("the workers get going", () -> ops.get() >= target);
            c.close();
            for (Thread w : workers) {
                w.join();
            }
            if (!failures.isEmpty()) {
                throw new AssertionError("round " + round + ": " + failures.peek(), failures.peek());
            }
            for (long d : done) {
                total += d;
            }
        }
        System.out.println("CloseRaceTest: " + rounds + " closes under load, " + total
                + " operations before them");
        assertTrue(total > 0);
    }

    @Test
    void closeWaitsForAConsumerInFlight() throws Exception {
        LarderCache<byte[], byte[]> c = TestSupport.bytes().build();
        byte[] v = new byte[4096];
        for (int i = 0; i < v.length; i++) {
            v[i] = (byte) i;
        }
        c.put(b("k"), v);
        CountDownLatch inside = new CountDownLatch(1);
        AtomicBoolean finished = new AtomicBoolean();
        AtomicBoolean closeStarted = new AtomicBoolean();
        AtomicLong badReads = new AtomicLong();
        AtomicLong readsAfterCloseStarted = new AtomicLong();
        // The consumer stays inside until it has read the value 200 more times
        // after close() began: close must wait for all of them.
        Thread reader = new Thread(() -> c.getDirect(b("k"), view -> {
            inside.countDown();
            while (readsAfterCloseStarted.get() < 200) {
                for (int i = 0; i < view.length(); i++) {
                    if (view.getByte(i) != (byte) i) {
                        badReads.incrementAndGet();
                    }
                }
                if (closeStarted.get()) {
                    readsAfterCloseStarted.incrementAndGet();
                }
            }
            finished.set(true);
        }));
        reader.start();
        inside.await();
        closeStarted.set(true);
        c.close();
        assertTrue(finished.get(), "close returned while a consumer was still reading");
        reader.join();
        assertEquals(0, badReads.get());
    }

    /*
     * close() from inside a DirectValueConsumer, or from the cache's own
     * removal listener, while another thread's close() of that cache is
     * under way (it waits for the consumer's call, or joins the listener's
     * maintainer): refused with IllegalStateException, as when no close is
     * under way. Both waited for the close lock the other close held, and
     * neither close returned. The inner close is made once the cache refuses
     * calls (the other close has begun), so no timing decides the order.
     */
    @Test
    void closeFromAConsumerOrListenerDuringAnotherCloseIsRefused() throws Exception {
        for (String from : new String[] {"consumer", "listener"}) {
            Queue<String> inner = new ConcurrentLinkedQueue<>();
            boolean returned = closeWhileInside(from, TestSupport.strings(), self -> {
                try {
                    self.close();
                    inner.add("closed");
                } catch (IllegalStateException e) {
                    inner.add(e.getMessage());
                }
            });
            assertTrue(returned, from + ": the outer close() did not return");
            assertEquals(1, inner.size(), from);
            assertTrue(inner.peek().contains(from.equals("listener") ? "own removal listener"
                    : "inside a DirectValueConsumer"), from + ": " + inner.peek());
        }
    }

    /*
     * Builds a cache with builder, puts "k", and makes a call from inside a
     * DirectValueConsumer of "k" (from "consumer") or from the cache's own
     * removal listener as "k" is removed (from "listener"). That call waits
     * until another thread's close() of the cache has begun (the cache
     * refuses calls), so no timing decides the order, then runs whileClosing
     * on the cache. Returns whether that close() returned within WAIT_MS.
     */
    static boolean closeWhileInside(String from, LarderCacheBuilder<String, String> builder,
            Consumer<LarderCache<String, String>> whileClosing) throws InterruptedException {
        AtomicReference<LarderCache<String, String>> self = new AtomicReference<>();
        CountDownLatch inside = new CountDownLatch(1);
        Runnable onceClosing = () -> {
            inside.countDown();
            awaitRefusal(self.get());
            whileClosing.accept(self.get());
        };
        if (from.equals("listener")) {
            builder.removalListener((k, v, cause) -> onceClosing.run());
        }
        LarderCache<String, String> c = builder.build();
        self.set(c);
        c.put("k", "v");
        if (from.equals("listener")) {
            c.remove("k");
        } else {
            Thread reader = new Thread(() -> c.getDirect("k", view -> onceClosing.run()));
            reader.setDaemon(true);
            reader.start();
        }
        inside.await();
        Thread closer = new Thread(c::close);
        closer.setDaemon(true);
        closer.start();
        closer.join(TestSupport.WAIT_MS);
        return !closer.isAlive();
    }

    /* Returns once c refuses calls: a close() of it has begun. */
    static void awaitRefusal(LarderCache<String, ?> c) {
        for (;;) {
            try {
                c.containsKey("k");
                Thread.onSpinWait();
            } catch (IllegalStateException closing) {
                return;
            }
        }
    }

    @Test
    void concurrentClosesAllReturnClosed() throws Exception {
        for (int round = 0; round < 50; round++) {
            LarderCache<byte[], byte[]> c = TestSupport.bytes().build();
            c.put(b("k"), b("v"));
            Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
            List<Thread> closers = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                Thread th = new Thread(() -> {
                    try {
                        c.close();
                        c.get(b("k"));
                        failures.add(new AssertionError("get after close succeeded"));
                    } catch (IllegalStateException expected) {
                        // closed, as it should be
                    } catch (Throwable e) {
                        failures.add(e);
                    }
                });
                closers.add(th);
                th.start();
            }
            for (Thread th : closers) {
                th.join();
            }
            assertTrue(failures.isEmpty(), String.valueOf(failures.peek()));
        }
    }
}
