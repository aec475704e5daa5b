package org.apache.kafka.streams.processor.internals;

import net.bytebuddy.asm.Advice;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * The agent's advice for RecordDeserializer. One class per advised method, named after it (or
 * after what it does where several methods share it); each is inlined into its method and only hands
 * off to streamshard's helpers. The rows that place them (method, parameters, fields read,
 * versions) are in {@code io.streamshard.agent.RecordDeserializerHooks}.
 */
public final class RecordDeserializerAdvice {
    private RecordDeserializerAdvice() {}

    /** RecordDeserializer.deserialize exit, before Kafka Streams 4.1: the result keeps the raw bytes. */
    public static final class Deserialize {
        @Advice.OnMethodExit
        static void exit(
                @Advice.Argument(1) ConsumerRecord<byte[], byte[]> raw,
                @Advice.Return(readOnly = false) ConsumerRecord<Object, Object> deserialized) {
            deserialized = StreamShardCompat.Upto40.carry(deserialized, raw);
        }
    }
}
