package io.streamshard.scheduler;

import io.streamshard.agent.AgentLog;

/**
 * Where the native library's log events (Rust {@code tracing}) arrive: one native thread calls
 * {@link #log} for each, and it goes to SLF4J's {@code io.streamshard} logger as the Kafka
 * Streams class loader has it, else to stderr.
 */
public final class NativeLog {
    private static volatile ClassLoader loader;
    private static boolean installed;

    private NativeLog() {}

    /** The class loader whose SLF4J the native events go to (the application's Kafka Streams one). */
    public static void useLoader(ClassLoader l) {
        loader = l;
    }

    /** Routes native events here (once per process). */
    static synchronized void install() {
        if (!installed) {
            installed = true;
            install0(NativeLog.class);
        }
    }

    /** Called from native code: {@code level} 40 error, 30 warn, 20 info, 10 debug. */
    static void log(int level, String message) {
        String text = "streamshard (native): " + message;
        ClassLoader l = loader;
        if (level >= 40) {
            AgentLog.error(l, text, null);
        } else if (level >= 30) {
            AgentLog.warn(l, text);
        } else if (level >= 20) {
            AgentLog.info(l, text);
        }
    }

    private static native void install0(Class<?> sink);
}
