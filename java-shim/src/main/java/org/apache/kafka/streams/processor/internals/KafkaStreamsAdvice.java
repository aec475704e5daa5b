package org.apache.kafka.streams.processor.internals;

import net.bytebuddy.asm.Advice;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;

/**
 * The agent's advice for KafkaStreams. One class per advised method, named after it (or after
 * what it does where several methods share it); each is inlined into its method and only hands
 * off to streamshard's helpers. The rows that place them (method, parameters, fields read,
 * versions) are in {@code io.streamshard.agent.KafkaStreamsHooks}.
 */
public final class KafkaStreamsAdvice {
    private KafkaStreamsAdvice() {}

    /** KafkaStreams private constructor exit. */
    public static final class Constructor {
        @Advice.OnMethodExit
        static void exit(
                @Advice.This KafkaStreams streams,
                @Advice.FieldValue("applicationConfigs") StreamsConfig config,
                @Advice.FieldValue("streamsMetrics") Object metrics,
                @Advice.FieldValue("clientId") String clientId,
                @Advice.FieldValue("metrics") Metrics registry) {
            StreamShardInstances.instanceCreated(streams, config, metrics, clientId, registry);
        }
    }

    /**
     * KafkaStreams.setState entry: the shutdown helper sets NOT_RUNNING or ERROR after every
     * StreamThread has finished; stopping the workers before the state changes means close()
     * cannot return while a worker is still alive.
     */
    public static final class SetState {
        @Advice.OnMethodEnter
        static void enter(@Advice.This KafkaStreams streams, @Advice.Argument(0) KafkaStreams.State state) {
            StreamShardInstances.instanceStopping(streams, state);
        }
    }
}
