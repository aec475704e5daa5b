package org.apache.kafka.streams.processor.internals;

import io.streamshard.agent.AgentState;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Headers;

/**
 * What differs between the Kafka Streams versions streamshard serves, behind one interface. Each
 * nested class is a variant for a range of versions and is only ever run on those: the install
 * check ({@code KafkaReferences}) resolves every Kafka member each variant uses against the
 * application's Kafka Streams and picks the first that fits, in name order; nothing links a member
 * its Kafka lacks.
 */
public abstract class StreamShardCompat {
    /** The variant for the Kafka Streams of this class's loader. */
    static final StreamShardCompat COMPAT = pick();

    /** The raw key bytes of a dequeued record (what the key lanes hash). */
    abstract byte[] rawKey(StampedRecord record);

    abstract byte[] rawValue(StampedRecord record);

    /** The record context a stock {@code doProcess} would build for {@code record}. */
    abstract ProcessorRecordContext context(StampedRecord record);

    /** {@code context} with other headers (a parked forward's own copy). */
    abstract ProcessorRecordContext withHeaders(ProcessorRecordContext context, Headers headers);

    static StreamShardCompat pick() {
        String name = AgentState.variant(StreamShardCompat.class.getClassLoader(), StreamShardCompat.class.getName());
        if (name == null) {
            // No install check ran for this loader (a unit test): the variant by the same rule.
            name = hasRawBytes() ? Since41.class.getName() : Upto40.class.getName();
        }
        try {
            return (StreamShardCompat)
                    Class.forName(name).getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("streamshard: cannot create " + name, e);
        }
    }

    private static boolean hasRawBytes() {
        try {
            StampedRecord.class.getMethod("rawKey");
            return true;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }

    /** Kafka Streams 4.1 and later: the dequeued record carries its raw bytes, and so does its context. */
    static final class Since41 extends StreamShardCompat {
        @Override
        byte[] rawKey(StampedRecord record) {
            return record.rawKey();
        }

        @Override
        byte[] rawValue(StampedRecord record) {
            return record.rawValue();
        }

        @Override
        ProcessorRecordContext context(StampedRecord record) {
            return new ProcessorRecordContext(
                    record.timestamp,
                    record.offset(),
                    record.partition(),
                    record.topic(),
                    record.headers(),
                    record.rawKey(),
                    record.rawValue());
        }

        @Override
        ProcessorRecordContext withHeaders(ProcessorRecordContext c, Headers headers) {
            return new ProcessorRecordContext(
                    c.timestamp(), c.offset(), c.partition(), c.topic(), headers, c.sourceRawKey(), c.sourceRawValue());
        }
    }

    /**
     * Kafka Streams 3.9 and 4.0: {@code RecordQueue} drops the raw bytes once it has deserialized a
     * record, so the deserializer's result is replaced by a {@link Carrier} that keeps them (advice
     * on {@code RecordDeserializer.deserialize}); contexts have no raw bytes.
     */
    static final class Upto40 extends StreamShardCompat {
        @Override
        byte[] rawKey(StampedRecord record) {
            Object r = record.value;
            return r instanceof Carrier ? ((Carrier) r).rawKey : null;
        }

        @Override
        byte[] rawValue(StampedRecord record) {
            Object r = record.value;
            return r instanceof Carrier ? ((Carrier) r).rawValue : null;
        }

        @Override
        ProcessorRecordContext context(StampedRecord record) {
            return new ProcessorRecordContext(
                    record.timestamp, record.offset(), record.partition(), record.topic(), record.headers());
        }

        @Override
        ProcessorRecordContext withHeaders(ProcessorRecordContext c, Headers headers) {
            return new ProcessorRecordContext(c.timestamp(), c.offset(), c.partition(), c.topic(), headers);
        }

        /** RecordDeserializer.deserialize exit: the deserialized record, carrying the raw bytes. */
        public static ConsumerRecord<Object, Object> carry(
                ConsumerRecord<Object, Object> deserialized, ConsumerRecord<byte[], byte[]> raw) {
            if (deserialized == null || raw == null) {
                return deserialized;
            }
            return new Carrier(deserialized, raw.key(), raw.value());
        }

        /** A deserialized record that keeps its raw key and value bytes. */
        static final class Carrier extends ConsumerRecord<Object, Object> {
            final byte[] rawKey;
            final byte[] rawValue;

            Carrier(ConsumerRecord<Object, Object> r, byte[] rawKey, byte[] rawValue) {
                super(
                        r.topic(),
                        r.partition(),
                        r.offset(),
                        r.timestamp(),
                        r.timestampType(),
                        r.serializedKeySize(),
                        r.serializedValueSize(),
                        r.key(),
                        r.value(),
                        r.headers(),
                        r.leaderEpoch());
                this.rawKey = rawKey;
                this.rawValue = rawValue;
            }
        }
    }
}
