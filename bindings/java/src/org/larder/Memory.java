package org.larder;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.nio.ByteOrder;

/**
 * Reads of native memory at an address, for {@link ValueView} only.
 *
 * <p>Goes through {@code sun.misc.Unsafe} (module jdk.unsupported, present in
 * every JDK from 9 to today), looked up reflectively and called through
 * constant method handles, which the JIT compiles to plain loads. There is no
 * public Java 11 API that reads memory at an address without allocating a
 * buffer object per call. Safety rests on the callers: ValueView only passes
 * addresses inside the value it was handed, and only while the engine holds
 * that value in place (see ValueView).
 */
final class Memory {
    static final boolean BIG_ENDIAN = ByteOrder.nativeOrder() == ByteOrder.BIG_ENDIAN;
    static final long BYTE_ARRAY_BASE;

    private static final MethodHandle GET_BYTE;
    private static final MethodHandle GET_SHORT;
    private static final MethodHandle GET_INT;
    private static final MethodHandle GET_LONG;
    private static final MethodHandle COPY;

    static {
        try {
            Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
            Field f = unsafeClass.getDeclaredField("theUnsafe");
            f.setAccessible(true);
            Object unsafe = f.get(null);
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            GET_BYTE = read(lookup, unsafeClass, unsafe, "getByte", byte.class);
            GET_SHORT = read(lookup, unsafeClass, unsafe, "getShort", short.class);
            GET_INT = read(lookup, unsafeClass, unsafe, "getInt", int.class);
            GET_LONG = read(lookup, unsafeClass, unsafe, "getLong", long.class);
            COPY = lookup.findVirtual(unsafeClass, "copyMemory", MethodType.methodType(void.class,
                    Object.class, long.class, Object.class, long.class, long.class)).bindTo(unsafe);
            MethodHandle base = lookup.findVirtual(unsafeClass, "arrayBaseOffset",
                    MethodType.methodType(int.class, Class.class)).bindTo(unsafe);
            BYTE_ARRAY_BASE = (int) base.invokeExact((Class<?>) byte[].class);
        } catch (Throwable e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private Memory() {
    }

    private static MethodHandle read(MethodHandles.Lookup lookup, Class<?> unsafeClass,
            Object unsafe, String name, Class<?> type) throws ReflectiveOperationException {
        return lookup.findVirtual(unsafeClass, name, MethodType.methodType(type, long.class))
                .bindTo(unsafe);
    }

    static byte getByte(long address) {
        try {
            return (byte) GET_BYTE.invokeExact(address);
        } catch (Throwable e) {
            throw new AssertionError(e);
        }
    }

    static short getShort(long address) {
        try {
            return (short) GET_SHORT.invokeExact(address);
        } catch (Throwable e) {
            throw new AssertionError(e);
        }
    }

    static int getInt(long address) {
        try {
            return (int) GET_INT.invokeExact(address);
        } catch (Throwable e) {
            throw new AssertionError(e);
        }
    }

    static long getLong(long address) {
        try {
            return (long) GET_LONG.invokeExact(address);
        } catch (Throwable e) {
            throw new AssertionError(e);
        }
    }

    /** Copies length bytes from address into dst[offset ...]. */
    static void copyToArray(long address, byte[] dst, int offset, int length) {
        try {
            COPY.invokeExact((Object) null, address, (Object) dst, BYTE_ARRAY_BASE + offset,
                    (long) length);
        } catch (Throwable e) {
            throw new AssertionError(e);
        }
    }
}
