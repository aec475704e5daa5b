package io.streamshard.agent;

import static io.streamshard.agent.StreamShardAgent.P;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.asm.AsmVisitorWrapper;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.ClassFileLocator;
import net.bytebuddy.pool.TypePool;

/**
 * The table of what the agent changes in Kafka Streams: the advice points ({@link Hook}) and the
 * member substitutions ({@link Rewrite}), each declared in the hooks file of its Kafka class. The
 * same table is checked against a loader's Kafka Streams ({@link #check}) and installed there
 * ({@link #visitors}), so what was checked is exactly what is installed.
 */
final class Hooks {
    private Hooks() {}

    /**
     * Every advice point, one list per instrumented Kafka class (its {@code …Hooks} file, beside the
     * {@code …Advice} file with the advice); all bind or none is installed.
     */
    static final List<Hook> HOOKS = Stream.of(
                    KafkaStreamsHooks.HOOKS,
                    InternalTopologyBuilderHooks.HOOKS,
                    StreamTaskHooks.HOOKS,
                    AbstractTaskHooks.HOOKS,
                    StreamThreadHooks.HOOKS,
                    TaskManagerHooks.HOOKS,
                    TaskExecutorHooks.HOOKS,
                    RecordDeserializerHooks.HOOKS,
                    ProcessorContextHooks.HOOKS,
                    StreamsProducerHooks.HOOKS,
                    StoreHooks.HOOKS)
            .flatMap(List::stream)
            .collect(Collectors.toUnmodifiableList());

    /** The member substitutions, each in the hooks file of the Kafka class it rewrites. */
    static final List<Rewrite> REWRITES = List.of(
            ProcessorContextHooks.FRAMES,
            ProcessorNodeHooks.RETRY_CALLS,
            SubscriptionSendProcessorSupplierHooks.RECORD_HASH);

    /** The advice installed on the Kafka Streams {@code pool} describes ("StreamTaskAdvice$DoProcess"). */
    static List<String> applied(TypePool pool) {
        List<String> out = new ArrayList<>();
        for (Hook h : HOOKS) {
            if (h.applies(pool)) {
                out.add(h.advice().substring(P.length()));
            }
        }
        return out;
    }

    /** The advice and substitutions per instrumented class, for the Kafka Streams {@code pool} describes. */
    static Map<String, List<AsmVisitorWrapper>> visitors(TypePool pool, ClassFileLocator locator) {
        Map<String, List<AsmVisitorWrapper>> byType = new LinkedHashMap<>();
        for (Hook h : HOOKS) {
            if (h.applies(pool)) {
                byType.computeIfAbsent(h.type(), k -> new ArrayList<>())
                        .add(Advice.to(pool.describe(h.advice()).resolve(), locator)
                                .on(h.matcher()));
            }
        }
        for (Rewrite r : REWRITES) {
            AsmVisitorWrapper v = r.visitor(pool);
            r.types.forEach(
                    t -> byType.computeIfAbsent(t, k -> new ArrayList<>()).add(v));
        }
        return byType;
    }

    /** What does not match in the instrumentation points of the Kafka Streams {@code pool} describes. */
    static List<String> check(TypePool pool) {
        List<String> problems = new ArrayList<>();
        Map<String, TypeDescription> types = new LinkedHashMap<>();
        for (Hook h : HOOKS) {
            TypeDescription t = types.computeIfAbsent(h.type(), n -> Rewrite.describe(pool, n));
            if (t == null) {
                problems.add("class " + h.type() + " not found");
                continue;
            }
            long matches;
            try {
                if (!h.applies(pool)) {
                    continue;
                }
                matches = t.getDeclaredMethods().filter(h.matcher()).size();
            } catch (RuntimeException | LinkageError e) {
                // A parameter type this class path does not have (a mixed Kafka class path).
                problems.add(h.describe() + " cannot be resolved (" + e.getMessage() + ")");
                continue;
            }
            if (matches != 1) {
                problems.add(h.describe() + (matches == 0 ? " not found" : " is ambiguous"));
            }
            for (String f : h.fields()) {
                if (Rewrite.findField(t, f) == null) {
                    problems.add("field " + h.type().substring(h.type().lastIndexOf('.') + 1) + "." + f + " not found");
                }
            }
        }
        for (Rewrite r : REWRITES) {
            problems.addAll(r.check(pool));
        }
        return problems;
    }
}
