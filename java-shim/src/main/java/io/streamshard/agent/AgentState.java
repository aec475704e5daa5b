package io.streamshard.agent;

import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;

/**
 * Whether every class the agent instruments was transformed. Classes are transformed lazily, as
 * Kafka Streams loads them, so a failure can come after installation; from then on no new
 * instance or task goes parallel (a task whose context class failed to transform must never run
 * on workers). Kept free of Kafka types so that the transformer's error callback can set it
 * without loading any class it instruments.
 */
public final class AgentState {
    private static volatile String failure;
    private static final Map<ClassLoader, Map<String, String>> VARIANTS =
            Collections.synchronizedMap(new WeakHashMap<>());

    /** The agent's argument as the JVM gave it (null: none); parsed and checked by the settings. */
    private static volatile String agentArguments;

    private AgentState() {}

    /** Keeps the agent's argument ({@code -javaagent:streamshard.jar=ARGS}). */
    static void agentArguments(String args) {
        agentArguments = args;
    }

    /**
     * The agent's argument: {@code streamshard.*} defaults for every instance of the JVM, as
     * {@code key=value} pairs separated by commas, the {@code streamshard.} prefix optional; null if none.
     */
    public static String agentArguments() {
        return agentArguments;
    }

    /** Records the first transformation failure. */
    public static void fail(String what) {
        if (failure == null) {
            failure = what;
        }
    }

    /** The first transformation failure, or null. */
    public static String failure() {
        return failure;
    }

    /** Records the helper variant each family uses in {@code loader} (family and variant class names). */
    static void variants(ClassLoader loader, Map<String, String> chosen) {
        VARIANTS.put(loader, Map.copyOf(chosen));
    }

    /** The variant of {@code family} the install-time check chose for {@code loader}, or null if none ran. */
    public static String variant(ClassLoader loader, String family) {
        Map<String, String> m = VARIANTS.get(loader);
        return m == null ? null : m.get(family);
    }
}
