package io.streamshard.runtime;

/** A record of a task threw on a worker thread; the cause is that exception, unchanged. */
public class ShardTaskFailedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ShardTaskFailedException(String task, Throwable cause) {
        super("task " + task + " failed on a streamshard worker: " + describe(cause), cause);
    }

    /** The cause as {@code toString()} gives it, or its class name where that throws. */
    private static String describe(Throwable cause) {
        try {
            return String.valueOf(cause);
        } catch (RuntimeException e) {
            return cause.getClass().getName() + " (its toString() threw "
                    + e.getClass().getName() + ")";
        }
    }
}
