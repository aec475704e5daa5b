package io.streamshard.scheduler;

/** An error reported by the native shard scheduler (misuse, unknown task, closed scheduler). */
public class SchedulerException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public SchedulerException(String message) {
        super(message);
    }
}
