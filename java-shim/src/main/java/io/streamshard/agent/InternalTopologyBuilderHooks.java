package io.streamshard.agent;

import static io.streamshard.agent.StreamShardAgent.P;

import java.util.List;

/**
 * Where the agent hooks into InternalTopologyBuilder: one row per advised method (exact parameters, the
 * fields the advice reads, the versions it applies to); the advice classes, named after the
 * methods, are {@code org.apache.kafka.streams.processor.internals.InternalTopologyBuilderAdvice}.
 */
final class InternalTopologyBuilderHooks {
    private InternalTopologyBuilderHooks() {}

    static final String TYPE = P + "InternalTopologyBuilder";
    private static final String ADVICE = P + "InternalTopologyBuilderAdvice$";

    static final List<Hook> HOOKS = List.of(new Hook(
            TYPE,
            "rewriteTopology",
            List.of("org.apache.kafka.streams.StreamsConfig"),
            ADVICE + "RewriteTopology",
            List.of("stateFactories")));
}
