package io.streamshard.agent;

import java.lang.reflect.Method;
import java.util.Map;
import java.util.WeakHashMap;

/**
 * The agent layer's log: through SLF4J as the application's class loader has it (found by name,
 * so the agent needs no SLF4J of its own), or one line on stderr with the {@code io.streamshard}
 * prefix when that loader has none.
 */
public final class AgentLog {
    private static final Map<ClassLoader, Object[]> LOGGERS = new WeakHashMap<>();

    private AgentLog() {}

    public static void error(ClassLoader loader, String message, Throwable cause) {
        log(loader, "error", "ERROR", message, cause);
    }

    public static void warn(ClassLoader loader, String message) {
        log(loader, "warn", "WARN", message, null);
    }

    public static void info(ClassLoader loader, String message) {
        log(loader, "info", "INFO", message, null);
    }

    private static void log(ClassLoader loader, String method, String level, String message, Throwable cause) {
        try {
            Object[] logger = logger(loader);
            if (logger != null) {
                ((Method) logger[1 + indexOf(method)]).invoke(logger[0], message, cause);
                return;
            }
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            // fall through to stderr
        }
        System.err.println("[streamshard] " + level + " io.streamshard - " + message);
        if (cause != null) {
            cause.printStackTrace(System.err);
        }
    }

    private static int indexOf(String method) {
        return "error".equals(method) ? 0 : "warn".equals(method) ? 1 : 2;
    }

    /** {logger, error, warn, info} (each (String, Throwable)), or null without SLF4J in {@code loader}. */
    private static synchronized Object[] logger(ClassLoader loader) {
        if (loader == null) {
            return null;
        }
        if (LOGGERS.containsKey(loader)) {
            return LOGGERS.get(loader);
        }
        Object[] found = null;
        try {
            Class<?> factory = Class.forName("org.slf4j.LoggerFactory", true, loader);
            Object logger = factory.getMethod("getLogger", String.class).invoke(null, "io.streamshard");
            Class<?> type = Class.forName("org.slf4j.Logger", true, loader);
            found = new Object[] {
                logger,
                type.getMethod("error", String.class, Throwable.class),
                type.getMethod("warn", String.class, Throwable.class),
                type.getMethod("info", String.class, Throwable.class)
            };
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            found = null;
        }
        LOGGERS.put(loader, found);
        return found;
    }
}
