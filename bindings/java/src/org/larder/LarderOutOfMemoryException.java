package org.larder;

/**
 * Memory was refused ({@code LARDER_ENOMEM}): by the operating system to the
 * cache, or by the JVM to the calling thread's scratch buffer, direct memory
 * that must hold a call's key and value (its limit,
 * {@code -XX:MaxDirectMemorySize}, is by default {@code -Xmx}: a value near
 * the 1 GiB limit needs more than a small heap allows). A {@code put} so
 * refused has removed the key's previous value; after any other call it is
 * intact. Not an {@link OutOfMemoryError}: the JVM goes on.
 */
public class LarderOutOfMemoryException extends LarderException {
    private static final long serialVersionUID = 1L;

    public LarderOutOfMemoryException(String message) {
        super(Native.ENOMEM, message);
    }
}
