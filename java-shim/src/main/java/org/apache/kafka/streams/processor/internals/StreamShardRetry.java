package org.apache.kafka.streams.processor.internals;

import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.Record;

/**
 * Where a record's failure is caught for a retry ({@code streamshard.retry.*}): in
 * {@code ProcessorNode.process}, the calls of the node's processor are routed through here (a
 * member substitution), so a failure is seen before Kafka Streams' processing exception handler
 * sees it. A failure of a record on a worker that has had no effect yet, of a kind and at an
 * attempt the policy retries, becomes {@link RetryLater}: an {@link Error}, which the nodes
 * above it let through (they catch {@code Exception}) up to the record's {@link Ticket}, which
 * sends the record back to its key's lane. Any other failure goes on as in stock.
 */
public final class StreamShardRetry {
    private StreamShardRetry() {}

    /** The record is to run again later; the wait is in its frame. Thrown without a stack trace. */
    static final class RetryLater extends Error {
        private static final long serialVersionUID = 1L;
        static final RetryLater INSTANCE = new RetryLater();

        private RetryLater() {
            super("streamshard: this record runs again after a backoff", null, false, false);
        }
    }

    /** ProcessorNode.process's call of {@code Processor.process}. */
    public static <K, V> void process(Processor<K, V, ?, ?> processor, Record<K, V> record) {
        try {
            processor.process(record);
        } catch (Exception e) {
            throw retryOr(e);
        }
    }

    /** ProcessorNode.process's call of {@code FixedKeyProcessor.process}. */
    public static <K, V> void process(FixedKeyProcessor<K, V, ?> processor, FixedKeyRecord<K, V> record) {
        try {
            processor.process(record);
        } catch (Exception e) {
            throw retryOr(e);
        }
    }

    /** {@link RetryLater} if the calling thread's record is to be retried; otherwise throws {@code e} as it is. */
    private static RetryLater retryOr(Exception e) {
        StreamShardFrames.Frame f = StreamShardFrames.current();
        if (f != null && f.retry != null && !f.effect) {
            long delay = f.retry.delayNanos(e, f.attempt);
            if (delay >= 0) {
                f.retryDelayNanos = delay;
                return RetryLater.INSTANCE;
            }
        }
        throw StreamShardRetry.<RuntimeException>sneaky(e);
    }

    /** Rethrows a checked exception (a Kotlin or Scala processor's) unchanged. */
    @SuppressWarnings("unchecked")
    private static <T extends Exception> T sneaky(Exception e) throws T {
        throw (T) e;
    }
}
