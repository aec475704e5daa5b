package io.streamshard.scheduler;

/** The scheduler was shut down while the call waited or before it started. */
public class SchedulerShutdownException extends SchedulerException {
    private static final long serialVersionUID = 1L;

    public SchedulerShutdownException(String message) {
        super(message);
    }
}
