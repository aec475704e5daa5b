package io.streamshard.agent;

import static net.bytebuddy.matcher.ElementMatchers.named;

import java.lang.instrument.Instrumentation;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.asm.AsmVisitorWrapper;
import net.bytebuddy.asm.MemberSubstitution;
import net.bytebuddy.description.field.FieldDescription;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.ClassFileLocator;
import net.bytebuddy.dynamic.DynamicType;
import net.bytebuddy.pool.TypePool;
import net.bytebuddy.utility.JavaModule;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The streamshard agent: {@code -javaagent:streamshard.jar} (premain), a late attach (agentmain),
 * or {@link #install(Instrumentation)}. Before changing anything it checks every instrumentation
 * point against the Kafka Streams classes on the class path; if one does not match, it logs one
 * ERROR naming what did not match and installs nothing, so the application runs stock.
 */
public final class StreamShardAgent {
    private static final Logger LOG = LoggerFactory.getLogger("io.streamshard");

    static final String P = "org.apache.kafka.streams.processor.internals.";
    static final String KS = "org.apache.kafka.streams.KafkaStreams";
    static final String STREAM_TASK = P + "StreamTask";
    static final String APC = P + "AbstractProcessorContext";
    static final String PCI = P + "ProcessorContextImpl";
    /** Advice classes are named, never loaded: loading one would load the Kafka class it advises. */
    static final String ADVICE = P + "StreamShardAdvice$";
    static final String FRAMES = P + "StreamShardFrames";

    /** Every advice point; all bind or none is installed. */
    static final List<Hook> HOOKS = List.of(
            new Hook(KS, Hook.CONSTRUCTOR, List.of(P + "TopologyMetadata", "org.apache.kafka.streams.StreamsConfig",
                    "org.apache.kafka.streams.KafkaClientSupplier", "org.apache.kafka.common.utils.Time"),
                    ADVICE + "InstanceCreated", List.of("applicationConfigs", "streamsMetrics", "clientId")),
            new Hook(KS, "setState", List.of(KS + "$State"), ADVICE + "InstanceState", List.of()),
            new Hook(P + "InternalTopologyBuilder", "rewriteTopology", List.of("org.apache.kafka.streams.StreamsConfig"),
                    ADVICE + "RewriteTopology", List.of("stateFactories")),
            new Hook(STREAM_TASK, Hook.CONSTRUCTOR, List.of("org.apache.kafka.streams.processor.TaskId", "java.util.Set",
                    P + "ProcessorTopology", "org.apache.kafka.clients.consumer.Consumer",
                    "org.apache.kafka.streams.TopologyConfig$TaskConfig", P + "metrics.StreamsMetricsImpl",
                    P + "StateDirectory", "org.apache.kafka.streams.state.internals.ThreadCache",
                    "org.apache.kafka.common.utils.Time", P + "ProcessorStateManager", P + "RecordCollector",
                    P + "InternalProcessorContext", "org.apache.kafka.common.utils.LogContext", "boolean"),
                    ADVICE + "TaskCreated", List.of("streamsMetrics")),
            new Hook(STREAM_TASK, "doProcess", List.of("long"), ADVICE + "DoProcess",
                    List.of("record", "recordInfo")),
            new Hook(STREAM_TASK, "isProcessable", List.of("long"), ADVICE + "IsProcessable", List.of()),
            new Hook(STREAM_TASK, "prepareCommit", List.of("boolean"), ADVICE + "PrepareCommit", List.of()),
            new Hook(STREAM_TASK, "suspend", List.of(), ADVICE + "Quiesce", List.of()),
            new Hook(STREAM_TASK, "maybePunctuateSystemTime", List.of(), ADVICE + "PunctuateSystemTime",
                    List.of("time", "systemTimePunctuationQueue", "commitNeeded")),
            new Hook(STREAM_TASK, "closeClean", List.of(), ADVICE + "CloseClean", List.of()),
            new Hook(STREAM_TASK, "prepareRecycle", List.of(), ADVICE + "CloseClean", List.of()),
            new Hook(STREAM_TASK, "closeDirty", List.of(), ADVICE + "CloseDirty", List.of()),
            new Hook(STREAM_TASK, "maybePunctuateStreamTime", List.of(), ADVICE + "PunctuateStreamTime",
                    List.of()),
            new Hook(PCI, "forwardInternal", List.of(P + "ProcessorNode", "org.apache.kafka.streams.processor.api.Record"),
                    ADVICE + "ForwardInternal", List.of()),
            new Hook(PCI, "currentStreamTimeMs", List.of(), ADVICE + "CurrentStreamTime", List.of()),
            new Hook(P + "StreamsProducer", "maybeBeginTransaction", List.of(), ADVICE + "BeginTransaction",
                    List.of("transactionInFlight")),
            new Hook(APC, "setSystemTimeMs", List.of("long"), ADVICE + "SetSystemTime", List.of()),
            new Hook(APC, "currentSystemTimeMs", List.of(), ADVICE + "CurrentSystemTime", List.of()));

    /** Fields whose every read and write in these classes goes through {@link StreamShardFrames}. */
    static final List<String> FRAMED_TYPES = List.of(APC, PCI);
    static final Map<String, List<String>> FRAMED_FIELDS = Map.of(APC, List.of("recordContext", "currentNode"));

    private static volatile boolean installed;

    private StreamShardAgent() {}

    public static void premain(String args, Instrumentation inst) {
        install(inst);
    }

    public static void agentmain(String args, Instrumentation inst) {
        install(inst);
    }

    /** Whether the agent is installed in this JVM. */
    public static boolean installed() {
        return installed;
    }

    /** Checks and installs; returns false (and logs one ERROR) if this Kafka Streams cannot be instrumented. */
    public static synchronized boolean install(Instrumentation inst) {
        if (installed) {
            return true;
        }
        ClassLoader loader = StreamShardAgent.class.getClassLoader();
        if (!guard(TypePool.Default.of(ClassFileLocator.ForClassLoader.of(loader)), kafkaStreamsVersion())) {
            return false;
        }
        // Everything is described from class files, so that nothing Kafka Streams declares is
        // loaded before the transformer is in place.
        ClassFileLocator locator = ClassFileLocator.ForClassLoader.of(loader);
        TypePool pool = TypePool.Default.of(locator);
        Map<String, List<AsmVisitorWrapper>> byType = new LinkedHashMap<>();
        for (Hook h : HOOKS) {
            byType.computeIfAbsent(h.type(), k -> new ArrayList<>())
                    .add(Advice.to(pool.describe(h.advice()).resolve(), locator).on(h.matcher()));
        }
        AsmVisitorWrapper frames = frameSubstitution(pool);
        FRAMED_TYPES.forEach(t -> byType.computeIfAbsent(t, k -> new ArrayList<>()).add(frames));
        List<String> failures = new ArrayList<>();
        AgentBuilder builder = new AgentBuilder.Default()
                .disableClassFormatChanges()
                .with(AgentBuilder.RedefinitionStrategy.RETRANSFORMATION)
                .with(new AgentBuilder.Listener.Adapter() {
                    @Override
                    public void onError(String typeName, ClassLoader cl, JavaModule module, boolean loaded,
                            Throwable throwable) {
                        failures.add(typeName + ": " + throwable);
                        AgentState.fail(typeName + ": " + throwable);
                        LOG.error("streamshard: instrumenting {} failed; no new task runs parallel, the "
                                + "application runs stock from here on", typeName, throwable);
                    }
                });
        for (Map.Entry<String, List<AsmVisitorWrapper>> e : byType.entrySet()) {
            List<AsmVisitorWrapper> visitors = e.getValue();
            builder = builder.type(named(e.getKey())).transform((b, td, cl, module, pd) -> {
                DynamicType.Builder<?> out = b;
                for (AsmVisitorWrapper v : visitors) {
                    out = out.visit(v);
                }
                return out;
            });
        }
        builder.installOn(inst);
        installed = failures.isEmpty();
        if (installed) {
            LOG.info("streamshard: agent installed on Kafka Streams {}", kafkaStreamsVersion());
        }
        return installed;
    }

    /**
     * The version guard: true if every hook matches the classes {@code pool} describes; otherwise
     * one ERROR naming every mismatch, and false (the caller then installs nothing).
     */
    static boolean guard(TypePool pool, String version) {
        List<String> problems = check(pool);
        if (problems.isEmpty()) {
            return true;
        }
        LOG.error("streamshard: cannot instrument Kafka Streams {} ({}); nothing was changed, the application "
                + "runs stock (serial)", version, String.join("; ", problems));
        return false;
    }

    /** Reads and writes of the per-thread context fields, routed through the frames. */
    static AsmVisitorWrapper frameSubstitution(TypePool pool) {
        TypeDescription frames = pool.describe(FRAMES).resolve();
        return MemberSubstitution.relaxed()
                .field(named("recordContext")).onRead().replaceWith(helper(frames, "readRecordContext"))
                .field(named("recordContext")).onWrite().replaceWith(helper(frames, "writeRecordContext"))
                .field(named("currentNode")).onRead().replaceWith(helper(frames, "readCurrentNode"))
                .field(named("currentNode")).onWrite().replaceWith(helper(frames, "writeCurrentNode"))
                .on(net.bytebuddy.matcher.ElementMatchers.any());
    }

    private static MethodDescription helper(TypeDescription frames, String name) {
        return frames.getDeclaredMethods().filter(named(name)).getOnly();
    }

    /** What does not match in the Kafka Streams classes that {@code pool} describes; empty if all does. */
    static List<String> check(TypePool pool) {
        List<String> problems = new ArrayList<>();
        Map<String, TypeDescription> types = new LinkedHashMap<>();
        for (Hook h : HOOKS) {
            TypeDescription t = types.computeIfAbsent(h.type(), n -> describe(pool, n));
            if (t == null) {
                problems.add("class " + h.type() + " not found");
                continue;
            }
            long matches = t.getDeclaredMethods().filter(h.matcher()).size();
            if (matches != 1) {
                problems.add(h.describe() + (matches == 0 ? " not found" : " is ambiguous"));
            }
            for (String f : h.fields()) {
                if (findField(t, pool, f) == null) {
                    problems.add("field " + h.type().substring(h.type().lastIndexOf('.') + 1) + "." + f + " not found");
                }
            }
        }
        for (Map.Entry<String, List<String>> e : FRAMED_FIELDS.entrySet()) {
            TypeDescription t = types.computeIfAbsent(e.getKey(), n -> describe(pool, n));
            for (String f : e.getValue()) {
                FieldDescription fd = t == null ? null : findField(t, pool, f);
                if (fd == null || fd.isPrivate() || fd.isStatic()) {
                    problems.add("field " + e.getKey() + "." + f + " not found as a non-private instance field");
                }
            }
        }
        for (String t : FRAMED_TYPES) {
            if (describe(pool, t) == null) {
                problems.add("class " + t + " not found");
            }
        }
        return problems;
    }

    private static TypeDescription describe(TypePool pool, String name) {
        TypePool.Resolution r = pool.describe(name);
        return r.isResolved() ? r.resolve() : null;
    }

    private static FieldDescription findField(TypeDescription type, TypePool pool, String name) {
        for (TypeDescription t = type; t != null; ) {
            var found = t.getDeclaredFields().filter(named(name));
            if (!found.isEmpty()) {
                return found.getOnly();
            }
            TypeDescription.Generic sup = t.getSuperClass();
            t = sup == null ? null : sup.asErasure();
        }
        return null;
    }

    /** The Kafka version on the class path, read without loading any class the agent instruments. */
    static String kafkaStreamsVersion() {
        try {
            return org.apache.kafka.common.utils.AppInfoParser.getVersion();
        } catch (RuntimeException | LinkageError e) {
            return "(version unknown)";
        }
    }
}
