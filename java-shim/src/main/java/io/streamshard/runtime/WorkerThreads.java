package io.streamshard.runtime;

import io.streamshard.config.StreamShardConfig;
import java.lang.reflect.Method;

/**
 * The kind of thread a {@link ShardExecutor}'s workers are ({@code streamshard.worker.threads}).
 * Platform workers wait for work inside the native scheduler; virtual ones (Java 21 and later)
 * park on the Java side, since a virtual thread blocked in a native call pins its carrier.
 */
public enum WorkerThreads {
    PLATFORM,
    VIRTUAL;

    /** {@code Thread.Builder}'s {@code name} and {@code unstarted}, and {@code Thread.ofVirtual}; null before Java 21. */
    private static final Method OF_VIRTUAL;

    private static final Method NAME;
    private static final Method UNSTARTED;

    static {
        Method of = null;
        Method name = null;
        Method unstarted = null;
        try {
            Class<?> builder = Class.forName("java.lang.Thread$Builder");
            of = Thread.class.getMethod("ofVirtual");
            name = builder.getMethod("name", String.class);
            unstarted = builder.getMethod("unstarted", Runnable.class);
        } catch (ReflectiveOperationException | LinkageError e) {
            of = null;
        }
        OF_VIRTUAL = of;
        NAME = name;
        UNSTARTED = unstarted;
    }

    /** Whether this JVM has virtual threads (Java 21 and later). */
    public static boolean virtualAvailable() {
        return OF_VIRTUAL != null;
    }

    /**
     * The kind the settings ask for, where this JVM has it: virtual threads asked for on a JVM
     * without them give platform workers (the settings checked already that the worker count
     * fits platform threads then; the instance logs one line saying so).
     */
    public static WorkerThreads of(StreamShardConfig config) {
        return config.virtualWorkers() && virtualAvailable() ? VIRTUAL : PLATFORM;
    }

    /** A new, unstarted worker thread running {@code body}. */
    Thread newThread(Runnable body, String name) {
        if (this == PLATFORM) {
            Thread t = new WorkerThread(body, name);
            t.setDaemon(true);
            return t;
        }
        try {
            Object builder = NAME.invoke(OF_VIRTUAL.invoke(null), name);
            return (Thread) UNSTARTED.invoke(builder, body);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot create a virtual thread on this JVM", e);
        }
    }
}
