package io.streamshard.agent;

import static net.bytebuddy.matcher.ElementMatchers.isDeclaredBy;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.takesArgument;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import io.streamshard.scheduler.NativeLibrary;
import io.streamshard.scheduler.NativeLibraryException;
import java.io.IOException;
import java.io.InputStream;
import java.lang.instrument.IllegalClassFormatException;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import net.bytebuddy.ByteBuddy;
import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.agent.builder.ResettableClassFileTransformer;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.asm.AsmVisitorWrapper;
import net.bytebuddy.asm.MemberSubstitution;
import net.bytebuddy.description.field.FieldDescription;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.ClassFileLocator;
import net.bytebuddy.dynamic.DynamicType;
import net.bytebuddy.matcher.ElementMatchers;
import net.bytebuddy.pool.TypePool;
import net.bytebuddy.utility.JavaModule;

/**
 * The streamshard agent: {@code -javaagent:streamshard.jar} (through {@link Premain}), a late
 * attach, or {@link #install(Instrumentation, ClassLoader)}. At start it only registers a
 * transformer, and loads nothing of Kafka's or SLF4J's: either may live only in a class loader
 * that does not exist yet (Spring Boot's nested jars).
 *
 * <p>The first time a class loader defines one of the classes the agent instruments, the agent
 * checks that loader's Kafka Streams: every instrumentation point, and every Kafka class, method and
 * field the helpers use ({@link KafkaReferences}). If all resolve it defines the helpers in that
 * loader (unless they are visible there already) and instruments its classes; otherwise it logs
 * one ERROR naming what did not match and leaves that loader alone, so its application runs stock.
 * A {@code Throwable} anywhere in this means the same.
 */
public final class StreamShardAgent {
    static final String P = "org.apache.kafka.streams.processor.internals.";
    static final String FRAMES = P + "StreamShardFrames";
    static final String RETRY = P + "StreamShardRetry";
    /** The class whose calls of its processor go through {@link #RETRY} (a member substitution). */
    static final String PROCESSOR_NODE = P + "ProcessorNode";
    /** The foreign-key join's per-record memo, kept per thread (StreamShardForeignKeys). */
    static final String FK_MEMO = P + "StreamShardForeignKeys";
    /** The class whose {@code recordHash} field goes through {@link #FK_MEMO}. */
    static final String FK_SEND =
            "org.apache.kafka.streams.kstream.internals.foreignkeyjoin.SubscriptionSendProcessorSupplier$UnbindChangeProcessor";

    private static final String API = "org.apache.kafka.streams.processor.api.";
    /** Minor versions the test suite runs on; another whose checks all pass installs with a WARN. */
    static final List<String> TESTED = List.of("3.9", "4.0", "4.1", "4.2", "4.3", "4.4");

    /**
     * Every advice point, one list per instrumented Kafka class (its {@code …Hooks} file, beside the
     * {@code …Advice} file with the advice); all bind or none is installed.
     */
    static final List<Hook> HOOKS = Stream.of(
                    KafkaStreamsHooks.HOOKS,
                    InternalTopologyBuilderHooks.HOOKS,
                    StreamTaskHooks.HOOKS,
                    StreamThreadHooks.HOOKS,
                    TaskManagerHooks.HOOKS,
                    RecordDeserializerHooks.HOOKS,
                    ProcessorContextHooks.HOOKS,
                    StreamsProducerHooks.HOOKS,
                    StoreHooks.HOOKS)
            .flatMap(List::stream)
            .collect(Collectors.toUnmodifiableList());

    /** Fields whose every read and write in these classes goes through {@link #FRAMES}. */
    static final List<String> FRAMED_TYPES = ProcessorContextHooks.FRAMED_TYPES;

    static final Map<String, List<String>> FRAMED_FIELDS =
            Map.of(ProcessorContextHooks.ABSTRACT, ProcessorContextHooks.FRAMED_FIELDS);

    private static volatile Instrumentation instrumentation;
    private static final Map<ClassLoader, Loader> LOADERS = Collections.synchronizedMap(new WeakHashMap<>());

    /** What the agent decided for one class loader that defines Kafka Streams. */
    static final class Loader {
        final boolean ok;
        final String version;
        final Map<String, List<AsmVisitorWrapper>> visitors;

        Loader(boolean ok, String version, Map<String, List<AsmVisitorWrapper>> visitors) {
            this.ok = ok;
            this.version = version;
            this.visitors = visitors;
        }
    }

    private StreamShardAgent() {}

    /**
     * Called by {@link Premain} with the agent's argument (default settings, see
     * {@link AgentState#agentArguments()}); never throws.
     */
    public static void premain(Instrumentation inst, String args) {
        try {
            AgentState.agentArguments(args);
            register(inst);
        } catch (Throwable t) {
            AgentLog.error(
                    null,
                    "streamshard: the agent could not start (" + t + "); nothing was changed, the "
                            + "application runs stock (serial)",
                    null);
        }
    }

    /** Whether the agent's transformer is registered in this JVM. */
    public static boolean installed() {
        return instrumentation != null;
    }

    /**
     * Registers the transformer if needed, then checks (and prepares) {@code loader}'s Kafka Streams
     * at once; true if its applications run with streamshard. Never throws.
     */
    public static boolean install(Instrumentation inst, ClassLoader loader) {
        try {
            return register(inst) && prepare(loader).ok;
        } catch (Throwable t) {
            AgentLog.error(
                    loader,
                    "streamshard: the agent could not start (" + t + "); nothing was changed, the "
                            + "application runs stock (serial)",
                    null);
            return false;
        }
    }

    /** Whether streamshard instruments {@code loader}'s Kafka Streams (checking it now if it has not yet). */
    public static boolean prepared(ClassLoader loader) {
        return instrumentation != null && prepare(loader).ok;
    }

    /**
     * Registers the transformer; false (after one ERROR) if the jar has no native scheduler for
     * this platform, and then nothing is instrumented. The library itself loads with the first
     * KafkaStreams (see StreamShardInstances.instanceCreated).
     */
    private static synchronized boolean register(Instrumentation inst) {
        if (instrumentation != null) {
            return true;
        }
        try {
            NativeLibrary.check();
        } catch (NativeLibraryException e) {
            AgentLog.error(null, e.getMessage() + "; nothing was changed, the application runs stock (serial)", null);
            return false;
        }
        // ByteBuddy's class injectors (which the agent never uses) would otherwise reach for
        // sun.misc.Unsafe, and JDK 24+ warns about that at start. The property is that of the
        // agent's own (relocated) ByteBuddy; an application's ByteBuddy is left alone.
        String safe = ByteBuddy.class.getPackage().getName() + ".safe";
        if (System.getProperty(safe) == null) {
            System.setProperty(safe, "true");
        }
        Set<String> types = new LinkedHashSet<>();
        HOOKS.forEach(h -> types.add(h.type()));
        types.addAll(FRAMED_TYPES);
        types.add(PROCESSOR_NODE);
        types.add(FK_SEND);
        // The transformer never looks at ByteBuddy's or the agent's own classes: loading one while
        // it runs (a TypePool, a locator) would otherwise re-enter it and define that class twice.
        AgentBuilder builder = new AgentBuilder.Default()
                .ignore(ElementMatchers.nameStartsWith(
                                ByteBuddy.class.getPackage().getName() + ".")
                        .or(ElementMatchers.nameStartsWith("io.streamshard."))
                        .or(ElementMatchers.isSynthetic()))
                .disableClassFormatChanges()
                // Loads every class the transformer itself uses before it is installed.
                .warmUp(Hook.class)
                .with(AgentBuilder.RedefinitionStrategy.RETRANSFORMATION)
                .with(AgentBuilder.InitializationStrategy.NoOp.INSTANCE)
                .with(AgentBuilder.InjectionStrategy.Disabled.INSTANCE)
                .with((AgentBuilder.TransformerDecorator) t -> new OnlyNamed(t, types))
                .with(new AgentBuilder.Listener.Adapter() {
                    @Override
                    public void onError(
                            String typeName, ClassLoader cl, JavaModule module, boolean loaded, Throwable throwable) {
                        AgentState.fail(typeName + ": " + throwable);
                        AgentLog.error(
                                cl,
                                "streamshard: instrumenting " + typeName + " failed; no new task runs "
                                        + "parallel, the application runs stock from here on",
                                throwable);
                    }
                });
        for (String type : types) {
            builder = builder.type(named(type)).transform((b, td, cl, module, pd) -> {
                if (cl == null) {
                    return b;
                }
                Loader l = prepare(cl);
                DynamicType.Builder<?> out = b;
                if (l.ok) {
                    for (AsmVisitorWrapper v : l.visitors.getOrDefault(type, List.of())) {
                        out = out.visit(v);
                    }
                }
                return out;
            });
        }
        instrumentation = inst;
        builder.installOn(inst);
        return true;
    }

    /**
     * The registered transformer: hands ByteBuddy only the classes the agent instruments, by
     * name. Otherwise every class the JVM loads went through ByteBuddy's type matching, which
     * parses its class file; with thousands of classes that cost about a second of CPU at start
     * and made ByteBuddy's parser hot enough for the JIT compiler to spend more on it while the
     * application was already processing.
     */
    static final class OnlyNamed extends ResettableClassFileTransformer.WithDelegation {
        private final Set<String> internalNames = new HashSet<>();

        OnlyNamed(ResettableClassFileTransformer delegate, Set<String> types) {
            super(delegate);
            types.forEach(t -> internalNames.add(t.replace('.', '/')));
        }

        @Override
        public byte[] transform(
                ClassLoader loader, String className, Class<?> redefined, ProtectionDomain domain, byte[] classFile)
                throws IllegalClassFormatException {
            return className != null && internalNames.contains(className)
                    ? classFileTransformer.transform(loader, className, redefined, domain, classFile)
                    : null;
        }

        @Override
        public byte[] transform(
                Module module,
                ClassLoader loader,
                String className,
                Class<?> redefined,
                ProtectionDomain domain,
                byte[] classFile)
                throws IllegalClassFormatException {
            return className != null && internalNames.contains(className)
                    ? classFileTransformer.transform(module, loader, className, redefined, domain, classFile)
                    : null;
        }
    }

    /** The decision for {@code loader}, made the first time it is asked. */
    static Loader prepare(ClassLoader loader) {
        synchronized (LOADERS) {
            Loader l = LOADERS.get(loader);
            if (l == null) {
                try {
                    l = decide(loader);
                } catch (Throwable t) {
                    AgentLog.error(
                            loader,
                            "streamshard: checking Kafka Streams failed (" + t + "); nothing was "
                                    + "changed, the application runs stock (serial)",
                            t);
                    l = new Loader(false, "?", Map.of());
                }
                LOADERS.put(loader, l);
            }
            return l;
        }
    }

    /**
     * The class loader whose class path has the streamshard jar (its helpers' class files, the
     * index): the agent's own, or the system class loader when the agent's layer was put on the
     * bootstrap path (see {@code Premain}).
     */
    static ClassLoader jarLoader() {
        ClassLoader own = StreamShardAgent.class.getClassLoader();
        return own != null ? own : ClassLoader.getSystemClassLoader();
    }

    private static Loader decide(ClassLoader loader) throws Exception {
        ClassLoader ours = jarLoader();
        if (!sees(loader, AgentState.class)) {
            AgentLog.error(
                    loader,
                    "streamshard: this class loader (" + loader + ") does not see the agent's classes "
                            + "(start the JVM with -javaagent:streamshard.jar); nothing was changed, its application runs "
                            + "stock (serial)",
                    null);
            return new Loader(false, "?", Map.of());
        }
        ClassFileLocator locator = new ClassFileLocator.Compound(
                ClassFileLocator.ForClassLoader.of(loader), ClassFileLocator.ForClassLoader.of(ours));
        TypePool pool = TypePool.Default.of(locator);
        String version = version(loader);
        KafkaReferences.Result result = verify(pool, version, KafkaReferences.index(ours));
        if (!guard(loader, result.problems, version)) {
            return new Loader(false, version, Map.of());
        }
        if (loader != ours) {
            HelperInjector.inject(instrumentation, loader, ours, KafkaReferences.lines(ours, KafkaReferences.HELPERS));
        }
        AgentState.variants(loader, result.variants);
        Map<String, List<AsmVisitorWrapper>> byType = visitors(pool, locator);
        if (!TESTED.contains(minor(version))) {
            AgentLog.warn(
                    loader,
                    "streamshard: Kafka Streams " + version + " is not among the tested versions ("
                            + String.join(", ", TESTED) + "); every check passed, so streamshard runs it");
        }
        AgentLog.info(loader, "streamshard: agent installed on Kafka Streams " + version);
        return new Loader(true, version, byType);
    }

    /**
     * Everything checked before a class loader is instrumented: the version is not older than the
     * oldest tested one, every hook that applies matches, and every Kafka member the helpers use
     * resolves ({@code refs}, from the build). Also says which variant of each helper family fits.
     */
    static KafkaReferences.Result verify(TypePool pool, String version, List<KafkaReferences.Ref> refs) {
        List<String> problems = new ArrayList<>();
        if (older(version, TESTED.get(0))) {
            problems.add("Kafka Streams " + version + " is older than " + TESTED.get(0)
                    + ", the oldest version streamshard serves");
        }
        problems.addAll(check(pool));
        KafkaReferences.Result r = KafkaReferences.check(pool, refs);
        problems.addAll(r.problems);
        return new KafkaReferences.Result(problems, r.variants);
    }

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
        AsmVisitorWrapper frames = frameSubstitution(pool);
        FRAMED_TYPES.forEach(
                t -> byType.computeIfAbsent(t, k -> new ArrayList<>()).add(frames));
        byType.computeIfAbsent(PROCESSOR_NODE, k -> new ArrayList<>()).add(retrySubstitution(pool));
        byType.computeIfAbsent(FK_SEND, k -> new ArrayList<>()).add(foreignKeyMemoSubstitution(pool));
        return byType;
    }

    /** Whether {@code version} ("3.7.2", "4.4.0 (with …)") is older than {@code minor} ("3.9"); false if unknown. */
    static boolean older(String version, String minor) {
        try {
            String[] v = minor(version).split("\\.");
            String[] m = minor.split("\\.");
            int major = Integer.parseInt(v[0]) - Integer.parseInt(m[0]);
            return major < 0 || major == 0 && Integer.parseInt(v[1]) < Integer.parseInt(m[1]);
        } catch (RuntimeException e) {
            return false;
        }
    }

    /** Whether {@code loader} resolves {@code type}'s name to {@code type} itself (one shared copy). */
    private static boolean sees(ClassLoader loader, Class<?> type) {
        try {
            return Class.forName(type.getName(), false, loader) == type;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /**
     * The version guard: true if nothing in {@code problems}; otherwise one ERROR naming every
     * mismatch, and false (the caller then installs nothing).
     */
    static boolean guard(ClassLoader loader, List<String> problems, String version) {
        if (problems.isEmpty()) {
            return true;
        }
        AgentLog.error(
                loader,
                "streamshard: cannot instrument Kafka Streams " + version + " (" + String.join("; ", problems)
                        + "); nothing was changed, the application runs stock (serial)",
                null);
        return false;
    }

    /** Reads and writes of the per-thread context fields, routed through the frames. */
    static AsmVisitorWrapper frameSubstitution(TypePool pool) {
        return fieldsThrough(
                pool.describe(FRAMES).resolve(), "recordContext", "RecordContext", "currentNode", "CurrentNode");
    }

    /**
     * Every read and write of each named field (pairs: the field, and the suffix of its helpers
     * {@code read<Suffix>}/{@code write<Suffix>} in {@code helpers}) goes through those helpers.
     */
    private static AsmVisitorWrapper fieldsThrough(TypeDescription helpers, String... fieldAndSuffix) {
        MemberSubstitution s = MemberSubstitution.relaxed();
        for (int i = 0; i < fieldAndSuffix.length; i += 2) {
            s = s.field(named(fieldAndSuffix[i]))
                    .onRead()
                    .replaceWith(helper(helpers, "read" + fieldAndSuffix[i + 1]))
                    .field(named(fieldAndSuffix[i]))
                    .onWrite()
                    .replaceWith(helper(helpers, "write" + fieldAndSuffix[i + 1]));
        }
        return s.on(ElementMatchers.any());
    }

    /**
     * ProcessorNode.process's calls of its processor ({@code Processor.process},
     * {@code FixedKeyProcessor.process}), routed through {@link #RETRY}, which sees a failure
     * before the processing exception handler does.
     */
    static AsmVisitorWrapper retrySubstitution(TypePool pool) {
        TypeDescription retry = pool.describe(RETRY).resolve();
        MemberSubstitution.WithoutSpecification.ForMatchedMethod plain =
                MemberSubstitution.relaxed().method(named("process").and(isDeclaredBy(named(API + "Processor"))));
        return plain.replaceWith(processHelper(retry, API + "Processor"))
                .method(named("process").and(isDeclaredBy(named(API + "FixedKeyProcessor"))))
                .replaceWith(processHelper(retry, API + "FixedKeyProcessor"))
                .on(named("process").and(takesArguments(1)));
    }

    /**
     * The foreign-key join's {@code recordHash} memo: every read and write inside
     * {@link #FK_SEND} goes to a slot of the calling thread ({@link #FK_MEMO}), so records of
     * different keys running at once never see each other's hash.
     */
    static AsmVisitorWrapper foreignKeyMemoSubstitution(TypePool pool) {
        return fieldsThrough(pool.describe(FK_MEMO).resolve(), "recordHash", "RecordHash");
    }

    private static MethodDescription processHelper(TypeDescription retry, String processorType) {
        return retry.getDeclaredMethods()
                .filter(named("process").and(takesArgument(0, named(processorType))))
                .getOnly();
    }

    private static MethodDescription helper(TypeDescription frames, String name) {
        return frames.getDeclaredMethods().filter(named(name)).getOnly();
    }

    /** What does not match in the instrumentation points of the Kafka Streams {@code pool} describes. */
    static List<String> check(TypePool pool) {
        List<String> problems = new ArrayList<>();
        Map<String, TypeDescription> types = new LinkedHashMap<>();
        for (Hook h : HOOKS) {
            TypeDescription t = types.computeIfAbsent(h.type(), n -> describe(pool, n));
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
                if (findField(t, f) == null) {
                    problems.add("field " + h.type().substring(h.type().lastIndexOf('.') + 1) + "." + f + " not found");
                }
            }
        }
        for (Map.Entry<String, List<String>> e : FRAMED_FIELDS.entrySet()) {
            TypeDescription t = types.computeIfAbsent(e.getKey(), n -> describe(pool, n));
            for (String f : e.getValue()) {
                FieldDescription fd = t == null ? null : findField(t, f);
                if (fd == null || fd.isPrivate() || fd.isStatic()) {
                    problems.add("field " + e.getKey() + "." + f + " not found as a non-private instance field");
                }
            }
        }
        List<String> substituted = new ArrayList<>(FRAMED_TYPES);
        substituted.add(PROCESSOR_NODE);
        for (String t : substituted) {
            if (describe(pool, t) == null) {
                problems.add("class " + t + " not found");
            }
        }
        TypeDescription send = describe(pool, FK_SEND);
        FieldDescription hash = send == null ? null : findField(send, "recordHash");
        if (hash == null
                || hash.isStatic()
                || !hash.getType().asErasure().getName().equals("[J")) {
            problems.add("field " + FK_SEND.substring(FK_SEND.lastIndexOf('.') + 1)
                    + ".recordHash not found as a long[] instance field");
        }
        return problems;
    }

    private static TypeDescription describe(TypePool pool, String name) {
        try {
            TypePool.Resolution r = pool.describe(name);
            return r.isResolved() ? r.resolve() : null;
        } catch (RuntimeException e) {
            return null;
        }
    }

    private static FieldDescription findField(TypeDescription type, String name) {
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

    /**
     * The Kafka Streams version {@code loader} has, from the jar's version resource (no class is
     * loaded); the clients version is named too when it differs.
     */
    public static String version(ClassLoader loader) {
        String streams = property(loader, "kafka/kafka-streams-version.properties");
        String clients = property(loader, "kafka/kafka-version.properties");
        if (streams == null) {
            return "(version unknown)";
        }
        return clients == null || clients.equals(streams) ? streams : streams + " (with kafka-clients " + clients + ")";
    }

    private static String property(ClassLoader loader, String resource) {
        try (InputStream in = loader.getResourceAsStream(resource)) {
            if (in == null) {
                return null;
            }
            Properties p = new Properties();
            p.load(in);
            String v = p.getProperty("version");
            return v == null ? null : v.trim();
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** "4.3" of "4.3.1" (or of "4.3.1 (with kafka-clients ...)"). */
    static String minor(String version) {
        String[] parts = version.split("[.\\s-]");
        return parts.length < 2 ? version : parts[0] + "." + parts[1];
    }
}
