package org.larder;

import java.nio.ByteBuffer;

/**
 * Turns keys or values into bytes and back, as in Cassandra OHC.
 *
 * <p>The cache calls {@link #serializedSize(Object)} first, checks the size
 * against its limits, then calls {@link #serialize(Object, ByteBuffer)} on a
 * buffer whose remaining space is exactly that size; writing a different
 * number of bytes is an error ({@link IllegalStateException}). A serializer
 * that neither allocates nor boxes in {@code serializedSize} and
 * {@code serialize} keeps the cache's reads of that key type free of heap
 * allocation.
 *
 * <p>{@link #deserialize(ByteBuffer)} reads the bytes between the buffer's
 * position and limit; the buffer is the cache's scratch space, so copy what
 * you keep: its contents change after the call returns. Implementations must
 * be thread-safe (they are called from many threads at once, and from the
 * cache's maintainer thread for the removal listener).
 *
 * <p>Ready ones: {@link CacheSerializers#BYTE_ARRAY},
 * {@link CacheSerializers#STRING}, {@link CacheSerializers#BYTE_BUFFER}.
 *
 * @param <T> the type serialized
 */
public interface CacheSerializer<T> {
    /** Writes {@code value}'s bytes at {@code buf}'s position, advancing it. */
    void serialize(T value, ByteBuffer buf);

    /** Reads a value from {@code buf}'s position to its limit. */
    T deserialize(ByteBuffer buf);

    /** The number of bytes {@code serialize} will write for {@code value}. */
    int serializedSize(T value);
}
