package io.streamshard.agent;

import static io.streamshard.agent.StreamShardAgent.P;

import java.util.List;

/**
 * Where the agent hooks into ProcessorContextImpl and AbstractProcessorContext: one row per advised method (exact parameters, the
 * fields the advice reads, the versions it applies to); the advice classes, named after the
 * methods, are {@code org.apache.kafka.streams.processor.internals.ProcessorContextAdvice}.
 * Beside these, every read and write of their fields {@link #FRAMED_FIELDS} goes through
 * StreamShardFrames (a member substitution, see StreamShardAgent#frameSubstitution).
 */
final class ProcessorContextHooks {
    private ProcessorContextHooks() {}

    static final String IMPL = P + "ProcessorContextImpl";
    static final String ABSTRACT = P + "AbstractProcessorContext";
    private static final String ADVICE = P + "ProcessorContextAdvice$";

    static final List<Hook> HOOKS = List.of(
            new Hook(
                    IMPL,
                    "forwardInternal",
                    List.of(P + "ProcessorNode", "org.apache.kafka.streams.processor.api.Record"),
                    ADVICE + "ForwardInternal",
                    List.of()),
            new Hook(IMPL, "currentStreamTimeMs", List.of(), ADVICE + "CurrentStreamTimeMs", List.of()),
            new Hook(ABSTRACT, "setSystemTimeMs", List.of("long"), ADVICE + "SetSystemTimeMs", List.of()),
            new Hook(ABSTRACT, "currentSystemTimeMs", List.of(), ADVICE + "CurrentSystemTimeMs", List.of()));

    /** The classes whose field accesses are substituted, and the fields. */
    static final List<String> FRAMED_TYPES = List.of(ABSTRACT, IMPL);

    static final List<String> FRAMED_FIELDS = List.of("recordContext", "currentNode");
}
