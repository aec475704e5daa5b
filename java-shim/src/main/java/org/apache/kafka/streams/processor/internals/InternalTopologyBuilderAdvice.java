package org.apache.kafka.streams.processor.internals;

import java.util.Map;
import net.bytebuddy.asm.Advice;
import org.apache.kafka.streams.StreamsConfig;

/**
 * The agent's advice for InternalTopologyBuilder. One class per advised method, named after it
 * (or after what it does where several methods share it); each is inlined into its method and only hands
 * off to streamshard's helpers. The rows that place them (method, parameters, fields read,
 * versions) are in {@code io.streamshard.agent.InternalTopologyBuilderHooks}.
 */
public final class InternalTopologyBuilderAdvice {
    private InternalTopologyBuilderAdvice() {}

    /** InternalTopologyBuilder.rewriteTopology exit. */
    public static final class RewriteTopology {
        @Advice.OnMethodExit
        static void exit(
                @Advice.This InternalTopologyBuilder builder,
                @Advice.Argument(0) StreamsConfig config,
                @Advice.FieldValue("stateFactories") Map<String, StoreFactory> factories) {
            StreamShardInstances.disableCaching(builder, config, factories);
        }
    }
}
