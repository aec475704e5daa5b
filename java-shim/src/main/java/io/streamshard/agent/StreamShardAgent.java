package io.streamshard.agent;

import static net.bytebuddy.matcher.ElementMatchers.named;

import io.streamshard.scheduler.NativeLibrary;
import io.streamshard.scheduler.NativeLibraryException;
import java.lang.instrument.Instrumentation;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;
import net.bytebuddy.ByteBuddy;
import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.asm.AsmVisitorWrapper;
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
        Hooks.HOOKS.forEach(h -> types.add(h.type()));
        Hooks.REWRITES.forEach(r -> types.addAll(r.types));
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
                .with(new LoadedFallbackPool.Strategy())
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
        String version = KafkaVersion.of(loader);
        KafkaReferences.Result result = verify(pool, version, KafkaReferences.index(ours));
        if (!guard(loader, result.problems, version)) {
            return new Loader(false, version, Map.of());
        }
        if (loader != ours) {
            HelperInjector.inject(instrumentation, loader, ours, KafkaReferences.lines(ours, KafkaReferences.HELPERS));
        }
        AgentState.variants(loader, result.variants);
        Map<String, List<AsmVisitorWrapper>> byType = Hooks.visitors(pool, locator);
        if (!KafkaVersion.TESTED.contains(KafkaVersion.minor(version))) {
            AgentLog.warn(
                    loader,
                    "streamshard: Kafka Streams " + version + " is not among the tested versions ("
                            + String.join(", ", KafkaVersion.TESTED) + "); every check passed, so streamshard runs it");
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
        if (KafkaVersion.older(version, KafkaVersion.TESTED.get(0))) {
            problems.add("Kafka Streams " + version + " is older than " + KafkaVersion.TESTED.get(0)
                    + ", the oldest version streamshard serves");
        }
        problems.addAll(Hooks.check(pool));
        KafkaReferences.Result r = KafkaReferences.check(pool, refs);
        problems.addAll(r.problems);
        return new KafkaReferences.Result(problems, r.variants);
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
}
