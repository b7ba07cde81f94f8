package org.larder;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
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
 *
 * <p>The memory starts on a cache line, and callers put a read's value on a
 * line of its own after the key ({@link #lineAfter}): a value written by the
 * engine into the line Java has just written the key to cost 7-10 ns per get
 * (measured). Keys and values written into the scratch go a long at a time
 * through a VarHandle up to 256 bytes (plain loads and stores once compiled;
 * the bulk ByteBuffer copy cost about 4 ns more for 16-64 bytes). A value
 * read out goes a long at a time only up to 16 bytes: the loop sits between
 * one get's cache misses and the next's, and at 10^7 entries a 64-byte value
 * copied by it cost about 250 ns more per get than the bulk copy (the
 * misses of the next get start later; docs/java.md, "10,000,000
 * entries").
 */
final class Scratch {
    static final int INITIAL_BYTES = 4096;
    static final int KEEP_BYTES = 1 << 20;
    static final int LINE = 64;
    private static final int SMALL_COPY_IN = 256;
    private static final int SMALL_COPY_OUT = 16;
    private static final VarHandle LONGS =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.nativeOrder());

    private static final ThreadLocal<Scratch> LOCAL = ThreadLocal.withInitial(Scratch::new);

    /** For serializers: big-endian whenever one is handed it ({@link #forSerializer}). */
    ByteBuffer buf;
    /** The same memory in native order, for the batch tables native code reads. */
    ByteBuffer table;
    long address;
    int capacity;
    final ValueView view = new ValueView();
    /* A short key in two longs, set by keyInLongs for Native.getShort. */
    long k0;
    long k1;
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
        // alignedSlice also rounds the end down to a line: ask for whole lines.
        buf = ByteBuffer.allocateDirect(lineAfter(bytes) + LINE).alignedSlice(LINE);
        table = buf.duplicate().order(ByteOrder.nativeOrder());
        address = Native.bufferAddress(buf);
        capacity = buf.capacity();
    }

    /** The first offset at or after off that starts a cache line. */
    static int lineAfter(int off) {
        return (off + LINE - 1) & -LINE;
    }

    /**
     * buf, framed to [at, at + len) for a serializer call and set back to
     * big-endian, ByteBuffer's order, whatever an earlier serializer set: the
     * buffer serves every cache on the thread, and one codec's
     * {@code order(LITTLE_ENDIAN)} stayed for the next, so a key another
     * serializer wrote with {@code putLong} took other bytes on that thread
     * than on the rest, and its reads missed.
     */
    ByteBuffer forSerializer(int at, int len) {
        buf.order(ByteOrder.BIG_ENDIAN);
        buf.limit(at + len).position(at);
        return buf;
    }

    /** Copies src[off .. off+len) into the scratch at at (which has the room). */
    void copyIn(byte[] src, int off, int len, int at) {
        if (len > SMALL_COPY_IN) {
            buf.limit(at + len).position(at);
            buf.put(src, off, len);
            return;
        }
        int i = 0;
        for (; i + 8 <= len; i += 8) {
            table.putLong(at + i, (long) LONGS.get(src, off + i));
        }
        for (; i < len; i++) {
            table.put(at + i, src[off + i]);
        }
    }

    /**
     * Loads key (1..16 bytes) into k0 and k1 in native byte order, as
     * Native.getShort rebuilds it: k0 its first 8 bytes (fewer when
     * shorter), k1 its last 8 (overlapping k0 when shorter than 16).
     */
    void keyInLongs(byte[] key) {
        int len = key.length;
        if (len >= 8) {
            k0 = (long) LONGS.get(key, 0);
            k1 = (long) LONGS.get(key, len - 8);
            return;
        }
        long v = 0;
        for (int i = 0; i < len; i++) {
            int shift = Memory.BIG_ENDIAN ? 56 - 8 * i : 8 * i;
            v |= (key[i] & 0xffL) << shift;
        }
        k0 = v;
        k1 = 0;
    }

    /** Copies len bytes of the scratch at at into dst[off ...]. */
    void copyOut(int at, byte[] dst, int off, int len) {
        if (len > SMALL_COPY_OUT) {
            buf.limit(at + len).position(at);
            buf.get(dst, off, len);
            return;
        }
        int i = 0;
        for (; i + 8 <= len; i += 8) {
            LONGS.set(dst, off + i, table.getLong(at + i));
        }
        for (; i < len; i++) {
            dst[off + i] = table.get(at + i);
        }
    }

    /**
     * Makes room for {@code bytes} in all, keeping the first {@code keep}
     * bytes (already serialized keys). Addresses taken before are invalid.
     *
     * @throws LarderOutOfMemoryException the JVM refused the direct memory
     *         (its limit, {@code -XX:MaxDirectMemorySize}, is by default the
     *         heap's {@code -Xmx}: a value near the 1 GiB limit needs more
     *         than a small heap allows); the scratch is unchanged, its first
     *         {@code keep} bytes still there
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
        try {
            allocate((int) grown);
        } catch (OutOfMemoryError e) {
            /* allocate() assigns nothing before allocateDirect returns. */
            LarderOutOfMemoryException refused = new LarderOutOfMemoryException("larder: no"
                    + " direct memory for the " + grown + " bytes of keys and values this call"
                    + " carries (the JVM's -XX:MaxDirectMemorySize, by default -Xmx): "
                    + e.getMessage());
            refused.initCause(e);
            throw refused;
        }
        old.limit(keep).position(0);
        buf.put(old);
        buf.clear();
    }
}
