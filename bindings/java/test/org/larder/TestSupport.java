package org.larder;

import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/** Helpers shared by the tests: caches of bytes, keys, and waits on conditions. */
final class TestSupport {
    /** Generous, as the C and Node tests' waits: the machines that run the suite are loaded. */
    static final long WAIT_MS = 60_000;

    private TestSupport() {
    }

    static LarderCacheBuilder<byte[], byte[]> bytes() {
        return LarderCacheBuilder.<byte[], byte[]>newBuilder()
                .keySerializer(CacheSerializers.BYTE_ARRAY)
                .valueSerializer(CacheSerializers.BYTE_ARRAY);
    }

    static LarderCacheBuilder<String, String> strings() {
        return LarderCacheBuilder.<String, String>newBuilder()
                .keySerializer(CacheSerializers.STRING)
                .valueSerializer(CacheSerializers.STRING);
    }

    static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static String s(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    /** Polls cond (every millisecond) until it holds or WAIT_MS pass; fails then. */
    static void waitUntil(String what, BooleanSupplier cond) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out after " + WAIT_MS + " ms waiting for: " + what);
            }
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                fail("interrupted waiting for: " + what);
            }
        }
    }
}
