package org.larder;

/**
 * The operating system refused memory ({@code LARDER_ENOMEM}) to the cache;
 * nothing changed and the key's previous value is intact. Not an
 * {@link OutOfMemoryError}: the Java heap is not involved.
 */
public class LarderOutOfMemoryException extends LarderException {
    private static final long serialVersionUID = 1L;

    public LarderOutOfMemoryException(String message) {
        super(Native.ENOMEM, message);
    }
}
