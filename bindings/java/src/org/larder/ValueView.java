package org.larder;

import java.util.Objects;

/**
 * A read-only view of a stored value's bytes, in place in the cache's
 * memory, handed to a {@link DirectValueConsumer} (the idea of RED OHC's
 * value view). Multi-byte reads are big-endian, as a {@code ByteBuffer}'s
 * default order (and so as {@link CacheSerializer}s usually write).
 *
 * <p>Valid only inside the consumer's {@code accept} call and only on the
 * thread that runs it: every method checks both and throws
 * {@link IllegalStateException} otherwise, and every index is checked
 * ({@link IndexOutOfBoundsException}), so keeping a view past its call can
 * never read freed memory. The engine holds the bytes unchanged during the
 * call even if another thread overwrites or removes the key meanwhile.
 * Views are reused by the thread: keep no reference.
 */
public final class ValueView {
    private final Thread owner = Thread.currentThread();
    private long address;
    private int length;
    private boolean valid;
    DirectValueConsumer consumer;

    ValueView() {
    }

    /* Called by native code (jni_cache.c, view_callback) inside the engine's
     * read section. */
    @SuppressWarnings("unused")
    private void dispatch(long valueAddress, int valueLength) {
        address = valueAddress;
        length = valueLength;
        valid = true;
        try {
            consumer.accept(this);
        } finally {
            valid = false;
            address = 0;
            length = 0;
        }
    }

    private long at(int index, int size) {
        if (!valid || Thread.currentThread() != owner) {
            throw new IllegalStateException(
                    "a ValueView is valid only inside its consumer's accept() call, on its thread");
        }
        Objects.checkFromIndexSize(index, size, length);
        return address + index;
    }

    /** The value's length in bytes. */
    public int length() {
        at(0, 0);
        return length;
    }

    public byte getByte(int index) {
        return Memory.getByte(at(index, 1));
    }

    public short getShort(int index) {
        short v = Memory.getShort(at(index, 2));
        return Memory.BIG_ENDIAN ? v : Short.reverseBytes(v);
    }

    public int getInt(int index) {
        int v = Memory.getInt(at(index, 4));
        return Memory.BIG_ENDIAN ? v : Integer.reverseBytes(v);
    }

    public long getLong(int index) {
        long v = Memory.getLong(at(index, 8));
        return Memory.BIG_ENDIAN ? v : Long.reverseBytes(v);
    }

    /** Copies {@code count} bytes from {@code index} into {@code dst[offset ...]}. */
    public void getBytes(int index, byte[] dst, int offset, int count) {
        Objects.checkFromIndexSize(offset, count, dst.length);
        Memory.copyToArray(at(index, count), dst, offset, count);
    }

    /** A copy of the whole value (allocates). */
    public byte[] toByteArray() {
        byte[] copy = new byte[length()];
        getBytes(0, copy, 0, copy.length);
        return copy;
    }
}
