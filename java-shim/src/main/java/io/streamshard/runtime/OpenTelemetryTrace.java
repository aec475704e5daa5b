package io.streamshard.runtime;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link RecordTrace} for OpenTelemetry's Java agent, reached by reflection (streamshard bundles
 * no OpenTelemetry; nothing here loads unless the agent is attached).
 *
 * <p>What the agent does to stock Kafka Streams (its {@code kafka-streams-0.11} module): on
 * entering {@code StreamTask.process} it puts an empty {@code StateHolder} in a thread-local;
 * when {@code PartitionGroup.nextRecord} returns a record it starts the record's {@code process}
 * span (parent: the context in the record's headers), makes it current and keeps the span, its
 * request and the scope in the holder; when {@code process} returns it closes the scope and ends
 * the span with what was thrown. Here, at the hand-off, the holder's span and request are taken
 * over, its scope closed on the StreamThread and the holder emptied (so the agent's exit ends
 * nothing); the span's context is made current on the worker and in the serial region, and the
 * span is ended by the agent's own instrumenter once the record's work is over.
 *
 * <p>If the agent's Kafka Streams classes are not reachable from Kafka's class loader (another
 * version, or its instrumentation modules in their own class loaders), what is current on the
 * StreamThread at the hand-off still follows the record, and the span ends at the hand-off as
 * before: one WARN says so.
 */
final class OpenTelemetryTrace implements RecordTrace {
    private static final Logger LOG = LoggerFactory.getLogger("io.streamshard");
    private static final String CONTEXT = "io.opentelemetry.javaagent.shaded.io.opentelemetry.context.Context";
    private static final String SCOPE = "io.opentelemetry.javaagent.shaded.io.opentelemetry.context.Scope";
    /** The module's package: up to 2.21, then with its version suffix (2.31 checked). */
    private static final String[] MODULE = {
        "io.opentelemetry.javaagent.instrumentation.kafkastreams.",
        "io.opentelemetry.javaagent.instrumentation.kafkastreams.v0_11.",
    };

    /** A record's context and, when the agent's span was taken over, its request (else null). */
    private static final class State {
        final Object context;
        final Object request;

        State(Object context, Object request) {
            this.context = context;
            this.request = request;
        }
    }

    private final MethodHandle current; // ()Object: Context.current()
    private final Object root; // Context.root()
    private final MethodHandle makeCurrent; // (Object)Object
    private final MethodHandle closeScope; // (Object)void
    // The agent's process span (all null: context only).
    private final ThreadLocal<?> holder;
    private final MethodHandle holderContext; // (Object)Object
    private final MethodHandle holderRequest; // (Object)Object
    private final MethodHandle holderCloseScope; // (Object)void
    private final MethodHandle holderSet; // (Object, Object, Object, Object)void
    private final MethodHandle end; // (Object, Object, Object, Throwable)void, bound to the instrumenter
    private final AtomicBoolean failed = new AtomicBoolean();

    private OpenTelemetryTrace(Class<?> context, Class<?> scope, Class<?> stateHolder, Class<?> singletons)
            throws ReflectiveOperationException {
        MethodHandles.Lookup l = MethodHandles.publicLookup();
        current = l.findStatic(context, "current", MethodType.methodType(context))
                .asType(MethodType.methodType(Object.class));
        try {
            root = l.findStatic(context, "root", MethodType.methodType(context)).invoke();
        } catch (Throwable t) {
            throw new ReflectiveOperationException(t);
        }
        makeCurrent = l.findVirtual(context, "makeCurrent", MethodType.methodType(scope))
                .asType(MethodType.methodType(Object.class, Object.class));
        closeScope = l.findVirtual(scope, "close", MethodType.methodType(void.class))
                .asType(MethodType.methodType(void.class, Object.class));
        if (stateHolder == null) {
            holder = null;
            holderContext = holderRequest = holderCloseScope = holderSet = end = null;
            return;
        }
        holder = threadLocal(stateHolder);
        MethodType get = MethodType.methodType(Object.class, Object.class);
        holderContext = l.findVirtual(stateHolder, "getContext", MethodType.methodType(context))
                .asType(get);
        Class<?> request = stateHolder.getMethod("getRequest").getReturnType();
        holderRequest = l.findVirtual(stateHolder, "getRequest", MethodType.methodType(request))
                .asType(get);
        holderCloseScope = l.findVirtual(stateHolder, "closeScope", MethodType.methodType(void.class))
                .asType(MethodType.methodType(void.class, Object.class));
        holderSet = l.findVirtual(stateHolder, "set", MethodType.methodType(void.class, request, context, scope))
                .asType(MethodType.methodType(void.class, Object.class, Object.class, Object.class, Object.class));
        Object instrumenter = singletons.getMethod("instrumenter").invoke(null);
        Class<?> instrumenterType = singletons.getMethod("instrumenter").getReturnType();
        end = l.findVirtual(
                        instrumenterType,
                        "end",
                        MethodType.methodType(void.class, context, Object.class, Object.class, Throwable.class))
                .bindTo(instrumenter)
                .asType(MethodType.methodType(void.class, Object.class, Object.class, Object.class, Throwable.class));
    }

    /** The holder's thread-local: a field {@code HOLDER} up to 2.21, a method {@code holder()} after. */
    private static ThreadLocal<?> threadLocal(Class<?> stateHolder) throws ReflectiveOperationException {
        try {
            return (ThreadLocal<?>) stateHolder.getField("HOLDER").get(null);
        } catch (NoSuchFieldException e) {
            return (ThreadLocal<?>) stateHolder.getMethod("holder").invoke(null);
        }
    }

    /** The trace for the agent attached to this JVM, or null if OpenTelemetry's Java agent is not. */
    static RecordTrace find(ClassLoader kafka) {
        Class<?> context = loaded(CONTEXT, null);
        Class<?> scope = loaded(SCOPE, null);
        if (context == null || scope == null) {
            return null;
        }
        Class<?> stateHolder = null;
        Class<?> singletons = null;
        for (String pkg : MODULE) {
            stateHolder = loaded(pkg + "StateHolder", kafka);
            singletons = loaded(pkg + "KafkaStreamsSingletons", kafka);
            if (stateHolder != null && singletons != null) {
                break;
            }
        }
        if (stateHolder == null || singletons == null) {
            stateHolder = singletons = null;
        }
        try {
            OpenTelemetryTrace t = new OpenTelemetryTrace(context, scope, stateHolder, singletons);
            if (t.holder != null) {
                LOG.info("streamshard: OpenTelemetry's Java agent is attached: each record's process span and "
                        + "context follow it to the workers and the serial region, and the span ends with its work");
            } else {
                LOG.warn("streamshard: OpenTelemetry's Java agent is attached, but its Kafka Streams "
                        + "instrumentation is not reachable from Kafka's class loader: the context current at "
                        + "each record's hand-off follows it to the workers, its process span ends at the hand-off");
            }
            return t;
        } catch (ReflectiveOperationException | RuntimeException e) {
            LOG.warn("streamshard: OpenTelemetry's Java agent is attached, but its context could not be reached (" + e
                    + "): records on the workers run outside their traces");
            return null;
        }
    }

    private static Class<?> loaded(String name, ClassLoader loader) {
        try {
            return Class.forName(name, false, loader);
        } catch (ClassNotFoundException | LinkageError e) {
            return null;
        }
    }

    @Override
    public Object handOff() {
        try {
            if (holder != null) {
                Object h = holder.get();
                if (h != null) {
                    Object context = (Object) holderContext.invokeExact(h);
                    if (context != null) {
                        Object request = (Object) holderRequest.invokeExact(h);
                        holderCloseScope.invokeExact(h);
                        holderSet.invokeExact(h, (Object) null, (Object) null, (Object) null);
                        return new State(context, request);
                    }
                }
            }
            Object context = (Object) current.invokeExact();
            return context == null || context == root ? null : new State(context, null);
        } catch (Throwable t) {
            broken(t);
            return null;
        }
    }

    @Override
    public Object enter(Object state) {
        try {
            return (Object) makeCurrent.invokeExact(((State) state).context);
        } catch (Throwable t) {
            broken(t);
            return null;
        }
    }

    @Override
    public void exit(Object scope) {
        if (scope == null) {
            return;
        }
        try {
            closeScope.invokeExact(scope);
        } catch (Throwable t) {
            broken(t);
        }
    }

    @Override
    public void end(Object state, Throwable failure) {
        State s = (State) state;
        if (s.request == null) {
            return;
        }
        try {
            end.invokeExact(s.context, s.request, (Object) null, failure);
        } catch (Throwable t) {
            broken(t);
        }
    }

    private void broken(Throwable t) {
        if (failed.compareAndSet(false, true)) {
            LOG.warn(
                    "streamshard: carrying OpenTelemetry's context failed (" + t + "); records go on, "
                            + "their traces may be cut",
                    t);
        }
    }
}
