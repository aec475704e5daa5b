package io.streamshard.scheduler;

/** A drain or close did not finish in time; the message says how many records remain and where. */
public class DrainTimeoutException extends SchedulerException {
    private static final long serialVersionUID = 1L;

    public DrainTimeoutException(String message) {
        super(message);
    }
}
