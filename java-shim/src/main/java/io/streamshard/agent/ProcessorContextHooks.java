package io.streamshard.agent;

import static io.streamshard.agent.StreamShardAgent.P;

import java.util.List;
import net.bytebuddy.description.field.FieldDescription;
import net.bytebuddy.description.type.TypeDescription;

/**
 * Where the agent hooks into ProcessorContextImpl and AbstractProcessorContext: one row per advised method (exact parameters, the
 * fields the advice reads, the versions it applies to); the advice classes, named after the
 * methods, are {@code org.apache.kafka.streams.processor.internals.ProcessorContextAdvice}.
 * Beside these, every read and write of their fields {@link #FRAMED_FIELDS} goes through
 * StreamShardFrames ({@link #FRAMES}: a worker sees its own frame, every other thread the field).
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

    private static final String FRAMES_HELPER = P + "StreamShardFrames";

    /** Reads and writes of the per-thread context fields, in both classes, routed through the frames. */
    static final Rewrite FRAMES = new Rewrite(
            FRAMED_TYPES,
            pool -> {
                List<String> problems = Rewrite.missing(pool, FRAMED_TYPES);
                TypeDescription t = Rewrite.describe(pool, ABSTRACT);
                for (String f : FRAMED_FIELDS) {
                    FieldDescription fd = t == null ? null : Rewrite.findField(t, f);
                    if (fd == null || fd.isPrivate() || fd.isStatic()) {
                        problems.add("field " + ABSTRACT + "." + f + " not found as a non-private instance field");
                    }
                }
                return problems;
            },
            pool -> Rewrite.fieldsThrough(
                    pool.describe(FRAMES_HELPER).resolve(),
                    "recordContext",
                    "RecordContext",
                    "currentNode",
                    "CurrentNode"));
}
