package org.apache.kafka.streams.processor.internals;

import io.streamshard.runtime.ShardExecutor;
import io.streamshard.runtime.ShardTaskFailedException;
import java.util.Set;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.streams.errors.StreamsException;
import org.apache.kafka.streams.errors.TaskCorruptedException;
import org.apache.kafka.streams.errors.internals.FailedProcessingException;
import org.apache.kafka.streams.processor.TaskId;

/**
 * A failure of a record on a worker, from where it is thrown to where the StreamThread throws it,
 * in the forms stock Kafka Streams expects; every translation is here. The worker's exception is
 * kept once, by its {@link ShardExecutor.ShardTask} (the native scheduler keeps only that the
 * record failed, which holds its offset and stops the task's dispatch), and thrown once on the
 * StreamThread: at the task's next {@code process} (from {@code isProcessable} or {@code
 * doProcess}) or at the drain before a commit, whichever comes first.
 */
final class TaskFailures {
    private TaskFailures() {}

    /**
     * On a worker: what stock's {@code StreamTask.process} turns a processing failure into, built
     * here, where the failed record is known. Stock formats its message from the task's current
     * record and its context's current node, which on the StreamThread are another record (or none)
     * and null by the time a worker's failure is rethrown there. Stock names the node a
     * {@code FailedProcessingException} carries (4.0+), else the context's current node, which its
     * forwards have restored to the source by then.
     */
    static RuntimeException asStock(RuntimeException e, TaskId task, String source, ProcessorRecordContext rc) {
        if (e instanceof FailedProcessingException) {
            String message = e.getMessage();
            if (message == null) {
                String node = failedNode(e);
                message = stockMessage(task, node != null ? node : source, rc);
            }
            return new StreamsException(message, e.getCause());
        }
        if (e instanceof StreamsException || e instanceof TimeoutException) {
            return e; // stock rethrows these as they are
        }
        return new StreamsException(stockMessage(task, source, rc), e);
    }

    private static String stockMessage(TaskId task, String node, ProcessorRecordContext rc) {
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

    /** On the StreamThread: throws the worker's failure unchanged where possible, so the stock path runs. */
    static void rethrow(ShardExecutor.ShardTask shard) {
        Throwable f = shard.failure();
        if (f instanceof RuntimeException) {
            throw (RuntimeException) f;
        }
        if (f instanceof Error) {
            throw (Error) f;
        }
        if (f != null) {
            throw new ShardTaskFailedException(shard.id(), f);
        }
    }

    /**
     * What the StreamThread throws for {@code e} from StreamTask.process ({@code doProcess}): a
     * worker's failure as the worker gave it, a StreamsException or a client TimeoutException as it
     * is, anything else wrapped in a StreamsException. For any other RuntimeException
     * StreamTask.process asks the context for its current node, which a skipped body never set.
     */
    static RuntimeException asThrownByProcess(RuntimeException e, ShardExecutor.ShardTask shard, TaskId task) {
        if (e instanceof ShardTaskFailedException) {
            Throwable f = shard == null ? null : shard.failure();
            if (f instanceof StreamsException) {
                return (StreamsException) f;
            }
            return new StreamsException(e.getMessage(), f != null ? f : e, task);
        }
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
    static RuntimeException asThrownByIsProcessable(
            RuntimeException e, ShardExecutor.ShardTask shard, TaskId task, boolean eos) {
        if (e instanceof TimeoutException) {
            return eos ? new TaskCorruptedException(Set.of(task)) : e;
        }
        return asThrownByProcess(e, shard, task);
    }
}
