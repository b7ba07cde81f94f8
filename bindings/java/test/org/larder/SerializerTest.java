package org.larder;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.larder.TestSupport.b;
import static org.larder.TestSupport.bytes;
import static org.larder.TestSupport.s;
import static org.larder.TestSupport.strings;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The ready serializers, and how the cache treats a serializer that misbehaves. */
class SerializerTest {
    private static <T> byte[] bytesOf(CacheSerializer<T> ser, T value) {
        ByteBuffer buf = ByteBuffer.allocate(ser.serializedSize(value));
        ser.serialize(value, buf);
        assertEquals(buf.capacity(), buf.position(), "serialize wrote serializedSize bytes");
        return buf.array();
    }

    @Test
    void stringsAreUtf8AsTheJdkEncodesThem() {
        String[] samples = {"", "plain ascii", "caf\u00e9", "\u20ac 100", "\u65e5\u672c\u8a9e",
            "emoji \ud83d\ude00 pair", "lone high \ud83d end", "lone low \ude00 end", "\ud83d",
            "\u0000\u007f\u0080\u07ff\u0800\uffff"};
        for (String v : samples) {
            assertArrayEquals(v.getBytes(StandardCharsets.UTF_8),
                    bytesOf(CacheSerializers.STRING, v), v);
        }
        Random rnd = new Random(12345);
        for (int i = 0; i < 2000; i++) {
            char[] cs = new char[rnd.nextInt(20)];
            for (int j = 0; j < cs.length; j++) {
                cs[j] = (char) rnd.nextInt(0x10000);
            }
            String v = new String(cs);
            assertArrayEquals(v.getBytes(StandardCharsets.UTF_8),
                    bytesOf(CacheSerializers.STRING, v));
        }
    }

    @Test
    void stringKeysAndValuesRoundTrip() {
        try (LarderCache<String, String> c = strings().build()) {
            c.put("\u65e5\u672c", "caf\u00e9 \ud83d\ude00");
            assertEquals("caf\u00e9 \ud83d\ude00", c.get("\u65e5\u672c"));
            assertTrue(c.replace("\u65e5\u672c", "caf\u00e9 \ud83d\ude00", "x"));
            assertEquals("x", c.get("\u65e5\u672c"));
            assertThrows(IllegalArgumentException.class, () -> c.get(""), "an empty key");
        }
    }

    @Test
    void byteBuffersKeepTheirPositionAndCopy() {
        ByteBuffer heap = ByteBuffer.wrap(b("__hello__"), 2, 5).slice();
        ByteBuffer direct = ByteBuffer.allocateDirect(9).put(b("__world__"));
        direct.position(2).limit(7);
        assertArrayEquals(b("hello"), bytesOf(CacheSerializers.BYTE_BUFFER, heap));
        assertArrayEquals(b("world"), bytesOf(CacheSerializers.BYTE_BUFFER, direct));
        assertEquals(2, direct.position());
        assertEquals(7, direct.limit());
        try (LarderCache<ByteBuffer, ByteBuffer> c = LarderCacheBuilder
                .<ByteBuffer, ByteBuffer>newBuilder().keySerializer(CacheSerializers.BYTE_BUFFER)
                .valueSerializer(CacheSerializers.BYTE_BUFFER).build()) {
            c.put(heap, direct);
            assertEquals(0, heap.position());
            ByteBuffer got = c.get(ByteBuffer.wrap(b("hello")));
            assertEquals(ByteBuffer.wrap(b("world")), got);
            ByteBuffer again = c.get(heap);
            got.put(0, (byte) 'W');
            assertEquals(ByteBuffer.wrap(b("world")), again, "each get is its own copy");
        }
    }

    @Test
    void byteArraysRoundTrip() {
        byte[] v = {0, 1, -1, 127, -128};
        assertArrayEquals(v, bytesOf(CacheSerializers.BYTE_ARRAY, v));
        assertArrayEquals(v, CacheSerializers.BYTE_ARRAY.deserialize(ByteBuffer.wrap(v)));
    }

    /** A serializer whose serialize() does not write what serializedSize() said. */
    private static final class Liar implements CacheSerializer<String> {
        final int extra;

        Liar(int extra) {
            this.extra = extra;
        }

        @Override
        public void serialize(String value, ByteBuffer buf) {
            buf.put(value.getBytes(StandardCharsets.UTF_8), 0, value.length() - 1);
        }

        @Override
        public String deserialize(ByteBuffer buf) {
            return StandardCharsets.UTF_8.decode(buf).toString();
        }

        @Override
        public int serializedSize(String value) {
            return value.length() + extra;
        }
    }

    @Test
    void aSerializerThatMisstatesItsSizeIsRefused() {
        try (LarderCache<String, String> c = LarderCacheBuilder.<String, String>newBuilder()
                .keySerializer(CacheSerializers.STRING).valueSerializer(new Liar(0)).build()) {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> c.put("k", "value"));
            assertTrue(e.getMessage().contains("serializedSize"), e.getMessage());
            assertEquals(0, c.stats().putCount(), "nothing was written");
            assertTrue(c.getAll(java.util.Collections.singletonList("k")).isEmpty());
        }
        try (LarderCache<String, String> c = LarderCacheBuilder.<String, String>newBuilder()
                .keySerializer(new Liar(-5)).valueSerializer(CacheSerializers.STRING).build()) {
            assertThrows(IllegalArgumentException.class, () -> c.put("k", "v"),
                    "a negative key size");
        }
    }

    /*
     * The other two ways to misstate a size got the ByteBuffer's own
     * exceptions, naming nothing of larder's: a serializer writing more than
     * serializedSize said (BufferOverflowException), and a negative size for
     * the expected value of a compare-and-set (IllegalArgumentException
     * "newPosition > limit"). Both now name serializedSize, as the short
     * write above does, and leave the entry as it was.
     */
    @Test
    void aSerializerThatOverstatesOrNegatesItsSizeIsRefusedByName() {
        try (LarderCache<String, String> c = LarderCacheBuilder.<String, String>newBuilder()
                .keySerializer(CacheSerializers.STRING).valueSerializer(new Liar(-2)).build()) {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> c.put("k", "value"));
            assertTrue(e.getMessage().contains("serializedSize"), e.getMessage());
            assertTrue(c.getAll(java.util.Collections.singletonList("k")).isEmpty());
        }
        CacheSerializer<String> negative = TestSupport.stringSerializer(value -> { },
                value -> value.equals("neg") ? -5 : CacheSerializers.STRING.serializedSize(value));
        try (LarderCache<String, String> c = LarderCacheBuilder.<String, String>newBuilder()
                .keySerializer(CacheSerializers.STRING).valueSerializer(negative).build()) {
            c.put("k", "v");
            for (Runnable call : new Runnable[] {() -> c.replace("k", "neg", "x"),
                () -> c.remove("k", "neg"), () -> c.addOrReplace("k", "neg", "x")}) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call::run);
                assertTrue(e.getMessage().contains("serializedSize"), e.getMessage());
            }
            assertEquals("v", c.get("k"));
        }
    }

    @Test
    void aSerializerThatThrowsLeavesTheCacheUsable() {
        CacheSerializer<String> failing = new CacheSerializer<String>() {
            @Override
            public void serialize(String value, ByteBuffer buf) {
                throw new UnsupportedOperationException("no");
            }

            @Override
            public String deserialize(ByteBuffer buf) {
                throw new UnsupportedOperationException("no");
            }

            @Override
            public int serializedSize(String value) {
                return value.length();
            }
        };
        try (LarderCache<String, String> c = LarderCacheBuilder.<String, String>newBuilder()
                .keySerializer(CacheSerializers.STRING).valueSerializer(failing).build()) {
            assertThrows(UnsupportedOperationException.class, () -> c.put("k", "v"));
            assertTrue(c.getInto("k", new byte[4]) == LarderCache.NOT_FOUND);
        }
    }

    /** A serializer that itself reads the cache: the thread's scratch must not be shared. */
    @Test
    void aSerializerMayCallIntoTheCache() {
        try (LarderCache<byte[], byte[]> inner = bytes().build()) {
            inner.put(b("prefix"), b("pre-"));
            CacheSerializer<String> reentrant = new CacheSerializer<String>() {
                @Override
                public void serialize(String value, ByteBuffer buf) {
                    buf.put(inner.get(b("prefix"))).put(value.getBytes(StandardCharsets.UTF_8));
                }

                @Override
                public String deserialize(ByteBuffer buf) {
                    String got = StandardCharsets.UTF_8.decode(buf).toString();
                    return got + "/" + s(inner.get(b("prefix")));
                }

                @Override
                public int serializedSize(String value) {
                    return 4 + value.length();
                }
            };
            try (LarderCache<String, String> c = LarderCacheBuilder.<String, String>newBuilder()
                    .keySerializer(CacheSerializers.STRING).valueSerializer(reentrant).build()) {
                c.put("k", "value");
                assertEquals("pre-value/pre-", c.get("k"));
            }
        }
    }

    /*
     * A codec that writes little-endian (buf.order(LITTLE_ENDIAN), as many
     * do) beside one that relies on ByteBuffer's big-endian default, on the
     * same thread: each serializer call gets the buffer big-endian. The
     * thread's scratch serves every cache and kept the order the last codec
     * set, so the second cache's keys took other bytes after a call on the
     * first (its get of a key it holds missed, and the key it wrote then came
     * back from a walk, which decodes a fresh big-endian buffer, as another
     * number).
     */
    @Test
    void eachSerializerCallGetsTheBufferBigEndian() {
        try (LarderCache<Long, Long> little = longs(longCodec(ByteOrder.LITTLE_ENDIAN));
                LarderCache<Long, Long> plain = longs(longCodec(null))) {
            plain.put(1L, 41L);
            little.put(5L, 6L);
            assertEquals(Long.valueOf(41), plain.get(1L), "a key written before");
            plain.put(2L, 42L);
            assertEquals(Long.valueOf(6), little.get(5L));
            assertEquals(Long.valueOf(42), plain.get(2L), "a value read after a little-endian one");
            assertEquals(2, plain.getAll(Arrays.asList(1L, 2L)).size());
            Set<Long> walked = new HashSet<>();
            try (CloseableIterator<Long> it = plain.keyIterator()) {
                it.forEachRemaining(walked::add);
            }
            assertEquals(new HashSet<>(Arrays.asList(1L, 2L)), walked);
        }
    }

    private static LarderCache<Long, Long> longs(CacheSerializer<Long> codec) {
        return LarderCacheBuilder.<Long, Long>newBuilder().keySerializer(codec)
                .valueSerializer(codec).build();
    }

    /* putLong and getLong in order, or in whatever order the buffer has when null. */
    private static CacheSerializer<Long> longCodec(ByteOrder order) {
        return new CacheSerializer<Long>() {
            @Override
            public void serialize(Long value, ByteBuffer buf) {
                (order == null ? buf : buf.order(order)).putLong(value);
            }

            @Override
            public Long deserialize(ByteBuffer buf) {
                return (order == null ? buf : buf.order(order)).getLong();
            }

            @Override
            public int serializedSize(Long value) {
                return 8;
            }
        };
    }
}
