package org.larder;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A thread's native scratch space: where keys and values are serialized
 * before a call and where the engine copies values on a read, so that only
 * primitives cross into native code.
 *
 * <p>One per thread, reused by every cache, grown on demand. Buffers up to
 * {@link #KEEP_BYTES} stay with the thread; a larger one (a value of more
 * than 1 MiB) is used for one call and dropped for the garbage collector,
 * never freed explicitly: a serializer may keep a reference to the buffer it
 * was given, and that must never reach freed memory.
 *
 * <p>A thread re-entering the binding while its scratch is in use (a
 * consumer or serializer calling into a cache) gets a fresh scratch for that
 * call, so the outer call's bytes and its {@link ValueView} are untouched.
 */
final class Scratch {
    static final int INITIAL_BYTES = 4096;
    static final int KEEP_BYTES = 1 << 20;

    private static final ThreadLocal<Scratch> LOCAL = ThreadLocal.withInitial(Scratch::new);

    /** Big-endian, for serializers. */
    ByteBuffer buf;
    /** The same memory in native order, for the batch tables native code reads. */
    ByteBuffer table;
    long address;
    int capacity;
    final ValueView view = new ValueView();
    private boolean busy;

    private Scratch() {
        allocate(INITIAL_BYTES);
    }

    /** The thread's scratch, or a fresh one when it is already in use. */
    static Scratch acquire() {
        Scratch s = LOCAL.get();
        if (s.busy) {
            s = new Scratch();
        }
        s.busy = true;
        return s;
    }

    void release() {
        busy = false;
        if (capacity > KEEP_BYTES) {
            allocate(INITIAL_BYTES);
        }
    }

    private void allocate(int bytes) {
        buf = ByteBuffer.allocateDirect(bytes);
        table = buf.duplicate().order(ByteOrder.nativeOrder());
        address = Native.bufferAddress(buf);
        capacity = bytes;
    }

    /**
     * Makes room for {@code bytes} in all, keeping the first {@code keep}
     * bytes (already serialized keys). Addresses taken before are invalid.
     */
    void ensure(long bytes, int keep) {
        if (bytes <= capacity) {
            return;
        }
        if (bytes > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("larder: " + bytes
                    + " bytes of keys and values in one call is over the 2 GiB a call can carry");
        }
        ByteBuffer old = buf;
        long grown = Math.max(bytes, Math.min(2L * capacity, KEEP_BYTES));
        allocate((int) grown);
        old.limit(keep).position(0);
        buf.put(old);
        buf.clear();
    }
}
