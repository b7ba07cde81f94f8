package org.larder;

import static org.junit.jupiter.api.Assertions.fail;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.ToIntFunction;

/** Helpers shared by the tests: caches of bytes, keys, serializers that misbehave, and waits on conditions. */
final class TestSupport {
    /** Generous, as the C and Node tests' waits: the machines that run the suite are loaded. */
    static final long WAIT_MS = 60_000;

    private TestSupport() {
    }

    /*
     * The builders the tests start from wait WAIT_MS for room at the memory
     * bound, as the C tests' th_config() does: the default second is no bound
     * on a loaded machine's maintainer, and a write past it throws
     * LarderBusyException. The tests of the wait set their own.
     */
    static LarderCacheBuilder<byte[], byte[]> bytes() {
        return LarderCacheBuilder.<byte[], byte[]>newBuilder()
                .keySerializer(CacheSerializers.BYTE_ARRAY)
                .valueSerializer(CacheSerializers.BYTE_ARRAY)
                .writeWaitMillis(WAIT_MS);
    }

    static LarderCacheBuilder<String, String> strings() {
        return LarderCacheBuilder.<String, String>newBuilder()
                .keySerializer(CacheSerializers.STRING)
                .valueSerializer(CacheSerializers.STRING)
                .writeWaitMillis(WAIT_MS);
    }

    /**
     * The STRING serializer, but running beforeSerialize first and stating
     * the size that size gives: the tests' serializers that misbehave.
     */
    static CacheSerializer<String> stringSerializer(Consumer<String> beforeSerialize,
            ToIntFunction<String> size) {
        return new CacheSerializer<String>() {
            @Override
            public void serialize(String value, ByteBuffer buf) {
                beforeSerialize.accept(value);
                CacheSerializers.STRING.serialize(value, buf);
            }

            @Override
            public String deserialize(ByteBuffer buf) {
                return CacheSerializers.STRING.deserialize(buf);
            }

            @Override
            public int serializedSize(String value) {
                return size.applyAsInt(value);
            }
        };
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
