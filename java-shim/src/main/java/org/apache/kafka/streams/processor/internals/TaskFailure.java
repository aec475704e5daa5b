package org.apache.kafka.streams.processor.internals;

import io.streamshard.runtime.ShardExecutor;
import java.util.Set;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.streams.errors.StreamsException;
import org.apache.kafka.streams.errors.TaskCorruptedException;
import org.apache.kafka.streams.errors.internals.FailedProcessingException;
import org.apache.kafka.streams.processor.TaskId;

/**
 * The first failure of a task's records on the workers, owned by its {@link ShardedTask}: kept
 * once, when a worker's record throws (the native scheduler keeps only that a record failed,
 * which holds its offset and stops the task's dispatch), and given back on the StreamThread in
 * the form stock Kafka Streams expects at each site: from {@code doProcess} ({@link #atProcess}),
 * from {@code isProcessable} ({@link #atIsProcessable}), at a drain ({@link #rethrow}). A worker
 * builds the exception stock's {@code process} would have thrown ({@link #asStock}), where the
 * failed record is known.
 */
final class TaskFailure implements ShardExecutor.FailureSink {
    private final TaskId task;
    /** Whether the instance runs exactly-once: what stock's StreamTask.process makes of a timeout. */
    private final boolean eos;

    private volatile Throwable first;

    TaskFailure(TaskId task, boolean eos) {
        this.task = task;
        this.eos = eos;
    }

    /** On a worker: keeps {@code e} if it is the task's first failure. */
    @Override
    public synchronized void failed(Throwable e) {
        if (first == null) {
            first = e;
        }
    }

    /** Whether a record failed since the task's last registration with the scheduler. */
    boolean failed() {
        return first != null;
    }

    /** After a close: the next registration starts without a failure (none of this one's records runs). */
    synchronized void clear() {
        first = null;
    }

    /**
     * At a drain (a commit, a suspend, a punctuation, a close, the switch to inline), once the
     * scheduler reported a record of the task failed: throws the worker's exception unchanged, so
     * the stock path runs on it; one that is neither a RuntimeException nor an Error (thrown
     * sneakily) in a StreamsException naming the task. Always throws.
     */
    void rethrow() {
        Throwable f = first;
        if (f instanceof RuntimeException) {
            throw (RuntimeException) f;
        }
        if (f instanceof Error) {
            throw (Error) f;
        }
        if (f != null) {
            throw new StreamsException("streamshard: task " + task + " failed on a worker: " + describe(f), f, task);
        }
        // The sink is told before the scheduler, so this is a bug of ours: never go on as if drained.
        throw new IllegalStateException(
                "streamshard: the scheduler reports a failed record of task " + task + " but none was kept");
    }

    /** {@code f} as {@code toString()} gives it, or its class name where that throws. */
    private static String describe(Throwable f) {
        try {
            return String.valueOf(f);
        } catch (RuntimeException e) {
            return f.getClass().getName() + " (its toString() threw "
                    + e.getClass().getName() + ")";
        }
    }

    /**
     * What the StreamThread throws for {@code e} from StreamTask.process ({@code doProcess}): a
     * StreamsException or a client TimeoutException as it is (a worker's failure already is one,
     * {@link #asStock}), anything else wrapped in a StreamsException: for any other
     * RuntimeException StreamTask.process asks the context for its current node, which a skipped
     * body never set.
     */
    RuntimeException atProcess(RuntimeException e) {
        if (e instanceof StreamsException || e instanceof TimeoutException) {
            return e;
        }
        return new StreamsException("streamshard: task " + task + ": " + e.getMessage(), e, task);
    }

    /**
     * The same from {@code isProcessable}, which stock's process calls outside its catch of a
     * timeout: what stock makes of a timeout (a send that timed out, say) is made here. Under
     * exactly-once the task is corrupted (closed dirty and read again from its committed
     * offsets); under at-least-once the timeout goes up as it is.
     */
    RuntimeException atIsProcessable(RuntimeException e) {
        if (e instanceof TimeoutException) {
            return eos ? new TaskCorruptedException(Set.of(task)) : e;
        }
        return atProcess(e);
    }

    /**
     * On a worker: what stock's {@code StreamTask.process} turns a processing failure into, built
     * here, where the failed record is known. Stock formats its message from the task's current
     * record and its context's current node, which on the StreamThread are another record (or none)
     * and null by the time a worker's failure is rethrown there. Stock names the node a
     * {@code FailedProcessingException} carries (4.0+), else the context's current node, which its
     * forwards have restored to the source by then.
     */
    RuntimeException asStock(RuntimeException e, String source, ProcessorRecordContext rc) {
        if (e instanceof FailedProcessingException) {
            String message = e.getMessage();
            if (message == null) {
                String node = failedNode(e);
                message = stockMessage(node != null ? node : source, rc);
            }
            return new StreamsException(message, e.getCause());
        }
        if (e instanceof StreamsException || e instanceof TimeoutException) {
            return e; // stock rethrows these as they are
        }
        return new StreamsException(stockMessage(source, rc), e);
    }

    private String stockMessage(String node, ProcessorRecordContext rc) {
        return String.format(
                "Exception caught in process. taskId=%s, processor=%s, topic=%s, partition=%d, " + "offset=%d",
                task, node, rc.topic(), rc.partition(), rc.offset());
    }

    /** {@code FailedProcessingException.failedProcessorNodeName()} (Kafka Streams 4.0+), or null. */
    static String failedNode(RuntimeException e) {
        try {
            return (String) e.getClass().getMethod("failedProcessorNodeName").invoke(e);
        } catch (ReflectiveOperationException | RuntimeException | LinkageError x) {
            return null;
        }
    }
}
