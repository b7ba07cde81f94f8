package org.larder;

/**
 * Reads a stored value in place: see
 * {@link LarderCache#getDirect(Object, DirectValueConsumer)}.
 *
 * <p>To keep the read free of heap allocation, pass the same consumer object
 * each time (a lambda that captures variables is a new object per call).
 */
@FunctionalInterface
public interface DirectValueConsumer {
    /**
     * Called once, on the calling thread, while the value's bytes are held
     * in place; {@code value} is valid only until this method returns.
     * An exception thrown here reaches the caller of {@code getDirect}.
     */
    void accept(ValueView value);
}
