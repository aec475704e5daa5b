package io.streamshard.scheduler;

/** A task failed: a worker reported a record as failed. The message names partition and offset. */
public class TaskFailedException extends SchedulerException {
    private static final long serialVersionUID = 1L;

    public TaskFailedException(String message) {
        super(message);
    }
}
