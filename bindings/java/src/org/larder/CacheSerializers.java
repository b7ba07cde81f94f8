package org.larder;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Ready-made serializers for {@code byte[]}, {@code String} (UTF-8) and
 * {@code ByteBuffer}. Each one's {@code serializedSize} and {@code serialize}
 * allocate nothing (but {@link #BYTE_BUFFER}'s on a direct buffer, see
 * there), so keys of these types cost no heap bytes on a read; each
 * {@code deserialize} returns a new object.
 */
public final class CacheSerializers {
    /** The array's bytes as they are; deserializes into a new array. */
    public static final CacheSerializer<byte[]> BYTE_ARRAY = new CacheSerializer<byte[]>() {
        @Override
        public void serialize(byte[] value, ByteBuffer buf) {
            buf.put(value);
        }

        @Override
        public byte[] deserialize(ByteBuffer buf) {
            byte[] b = new byte[buf.remaining()];
            buf.get(b);
            return b;
        }

        @Override
        public int serializedSize(byte[] value) {
            return value.length;
        }
    };

    /**
     * UTF-8, encoded without allocating; an unpaired surrogate becomes
     * {@code '?'}, as {@code String.getBytes(UTF_8)} does.
     */
    public static final CacheSerializer<String> STRING = new CacheSerializer<String>() {
        @Override
        public void serialize(String value, ByteBuffer buf) {
            int n = value.length();
            for (int i = 0; i < n; i++) {
                char c = value.charAt(i);
                if (c < 0x80) {
                    buf.put((byte) c);
                } else if (c < 0x800) {
                    buf.put((byte) (0xc0 | c >> 6)).put((byte) (0x80 | c & 0x3f));
                } else if (Character.isHighSurrogate(c) && i + 1 < n
                        && Character.isLowSurrogate(value.charAt(i + 1))) {
                    int cp = Character.toCodePoint(c, value.charAt(++i));
                    buf.put((byte) (0xf0 | cp >> 18)).put((byte) (0x80 | cp >> 12 & 0x3f))
                            .put((byte) (0x80 | cp >> 6 & 0x3f)).put((byte) (0x80 | cp & 0x3f));
                } else if (Character.isSurrogate(c)) {
                    buf.put((byte) '?');
                } else {
                    buf.put((byte) (0xe0 | c >> 12)).put((byte) (0x80 | c >> 6 & 0x3f))
                            .put((byte) (0x80 | c & 0x3f));
                }
            }
        }

        @Override
        public String deserialize(ByteBuffer buf) {
            return StandardCharsets.UTF_8.decode(buf).toString();
        }

        @Override
        public int serializedSize(String value) {
            int n = value.length(), size = 0;
            for (int i = 0; i < n; i++) {
                char c = value.charAt(i);
                if (c < 0x80) {
                    size += 1;
                } else if (c < 0x800) {
                    size += 2;
                } else if (Character.isHighSurrogate(c) && i + 1 < n
                        && Character.isLowSurrogate(value.charAt(i + 1))) {
                    size += 4;
                    i++;
                } else if (Character.isSurrogate(c)) {
                    size += 1;
                } else {
                    size += 3;
                }
            }
            return size;
        }
    };

    /**
     * The buffer's remaining bytes; its position and limit are left as they
     * were. A heap buffer is copied from its array; a direct one through a
     * {@code duplicate()} (one small object per call). Deserializes into a
     * new heap buffer.
     */
    public static final CacheSerializer<ByteBuffer> BYTE_BUFFER = new CacheSerializer<ByteBuffer>() {
        @Override
        public void serialize(ByteBuffer value, ByteBuffer buf) {
            if (value.hasArray()) {
                buf.put(value.array(), value.arrayOffset() + value.position(), value.remaining());
            } else {
                buf.put(value.duplicate());
            }
        }

        @Override
        public ByteBuffer deserialize(ByteBuffer buf) {
            ByteBuffer copy = ByteBuffer.allocate(buf.remaining());
            copy.put(buf).flip();
            return copy;
        }

        @Override
        public int serializedSize(ByteBuffer value) {
            return value.remaining();
        }
    };

    private CacheSerializers() {
    }
}
