package io.streamshard.scheduler;

/** The native library could not be found or loaded; the message names the file and the reason. */
public class NativeLibraryException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public NativeLibraryException(String message, Throwable cause) {
        super(message, cause);
    }
}
