package io.streamshard;

import java.util.Map;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.processor.internals.StreamShardRuntime;

/** What streamshard does with a {@code KafkaStreams} instance. */
public final class StreamShard {
    private StreamShard() {}

    /**
     * Per task id ("0_1"), "parallel" or "serial: reason", for the tasks this instance has
     * created so far. Empty if streamshard does not run this instance.
     */
    public static Map<String, String> explain(KafkaStreams streams) {
        return StreamShardRuntime.explain(streams);
    }

    /** Whether streamshard runs this instance (agent installed, enabled, supported settings). */
    public static boolean active(KafkaStreams streams) {
        return StreamShardRuntime.active(streams);
    }
}
