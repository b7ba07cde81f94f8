package org.larder;

/**
 * An error the engine reported that is not the caller's mistake (those are
 * {@link IllegalArgumentException}, {@link NullPointerException} and
 * {@link IllegalStateException}). {@link #code()} is the engine's
 * {@code LARDER_E*} code.
 */
public class LarderException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int code;

    public LarderException(int code, String message) {
        super(message);
        this.code = code;
    }

    /** The engine's result code ({@code enum larder_error} in larder.h). */
    public int code() {
        return code;
    }
}
