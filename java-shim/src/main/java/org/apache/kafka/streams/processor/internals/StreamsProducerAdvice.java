package org.apache.kafka.streams.processor.internals;

import java.util.concurrent.locks.ReentrantLock;
import net.bytebuddy.asm.Advice;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * The agent's advice for StreamsProducer. One class per advised method, named after it (or after
 * what it does where several methods share it); each is inlined into its method and only hands
 * off to streamshard's helpers. The rows that place them (method, parameters, fields read,
 * versions) are in {@code io.streamshard.agent.StreamsProducerHooks}.
 */
public final class StreamsProducerAdvice {
    private StreamsProducerAdvice() {}

    /**
     * StreamsProducer.maybeBeginTransaction: a check-then-act on a plain boolean, and under
     * exactly-once several workers of one StreamThread send through the same producer. While no
     * transaction is in flight, callers take a per-producer lock, so exactly one begins it.
     */
    public static final class MaybeBeginTransaction {
        @Advice.OnMethodEnter
        static ReentrantLock enter(
                @Advice.This StreamsProducer producer, @Advice.FieldValue("transactionInFlight") boolean inFlight) {
            // Without exactly-once there is no transaction to begin: no lock on every send.
            return inFlight || !producer.eosEnabled() ? null : StreamShardInstances.lockBegin(producer);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.Enter ReentrantLock lock) {
            if (lock != null) {
                lock.unlock();
            }
        }
    }

    /**
     * StreamsProducer.send: under exactly-once, a send of a worker's record that its task's next
     * commit may not cover is held on the record ({@link HeldSend}) and made by the StreamThread
     * when the record's offset is committed; the body is then skipped (its caller ignores the
     * future).
     */
    public static final class Send {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(
                @Advice.This StreamsProducer producer,
                @Advice.Argument(0) ProducerRecord<byte[], byte[]> record,
                @Advice.Argument(1) Callback callback) {
            return HeldSend.held(producer, record, callback);
        }
    }
}
