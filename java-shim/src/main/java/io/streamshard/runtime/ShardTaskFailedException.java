package io.streamshard.runtime;

/** A record of a task threw on a worker thread; the cause is that exception, unchanged. */
public class ShardTaskFailedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ShardTaskFailedException(String task, Throwable cause) {
        super("task " + task + " failed on a streamshard worker: " + cause, cause);
    }
}
