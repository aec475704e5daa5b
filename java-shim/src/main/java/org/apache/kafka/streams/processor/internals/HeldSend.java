package org.apache.kafka.streams.processor.internals;

import io.streamshard.runtime.RecordTrace;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * A send of a worker's record held for the transaction that commits the record's offset (under
 * exactly-once, {@code streamshard.commit.wait=none}): what the record's sink, repartition or
 * changelog write handed to its StreamThread's producer, made by that StreamThread when the
 * record retires from its task's {@link io.streamshard.runtime.CommitOrder}, in dequeue order.
 * The callback is Kafka Streams' own (offsets for the checkpoint, the send error for the next
 * send), so a held send fails as it would have failed when the worker made it, only later.
 */
final class HeldSend {
    private final StreamsProducer producer;
    private final ProducerRecord<byte[], byte[]> record;
    private final Callback callback;
    /** The record's trace (a tracing agent's), entered for the send; null: none. */
    private final RecordTrace trace;

    private final Object traced;

    private HeldSend(
            StreamsProducer producer,
            ProducerRecord<byte[], byte[]> record,
            Callback callback,
            RecordTrace trace,
            Object traced) {
        this.producer = producer;
        this.record = record;
        this.callback = callback;
        this.trace = trace;
        this.traced = traced;
    }

    /** StreamsProducer.send entry: whether the calling thread's record holds this send (then it is not made now). */
    static boolean held(StreamsProducer producer, ProducerRecord<byte[], byte[]> record, Callback callback) {
        StreamShardFrames.Frame f = StreamShardFrames.current();
        if (f == null || f.hold == null) {
            return false;
        }
        long bytes =
                (record.key() == null ? 0 : record.key().length) + (record.value() == null ? 0 : record.value().length);
        f.hold.hold(new HeldSend(producer, record, callback, f.trace, f.traced), bytes);
        return true;
    }

    /**
     * On the StreamThread: the send, into its current transaction, inside the record's trace
     * context (a tracing agent's publish span is then the record's process span's child, as in
     * stock, though that span has ended).
     */
    void send() {
        if (traced == null) {
            producer.send(record, callback);
            return;
        }
        Object scope = trace.enter(traced);
        try {
            producer.send(record, callback);
        } finally {
            trace.exit(scope);
        }
    }
}
