package io.streamshard.agent;

import java.lang.instrument.Instrumentation;

/**
 * The jar's {@code Premain-Class} and {@code Agent-Class}. Compiled for Java 8 and using nothing
 * but the JDK, so that it loads on any JVM: on one older than Java 11 it says so in one line and
 * installs nothing; on any other it starts the agent, and whatever goes wrong there is one line
 * too. The JVM always starts, and the application then runs stock.
 */
public final class Premain {
    static final String NEEDS = "streamshard: needs Java 11 or later; this JVM is Java ";

    private Premain() {}

    public static void premain(String args, Instrumentation inst) {
        start(inst);
    }

    public static void agentmain(String args, Instrumentation inst) {
        start(inst);
    }

    static void start(Instrumentation inst) {
        try {
            String spec = System.getProperty("java.specification.version");
            if (!supported(spec)) {
                System.err.println("[streamshard] ERROR io.streamshard - " + NEEDS + spec
                        + "; nothing was changed, the application runs stock (serial)");
                return;
            }
            Class.forName("io.streamshard.agent.StreamShardAgent").getMethod("premain", Instrumentation.class)
                    .invoke(null, inst);
        } catch (Throwable t) {
            Throwable cause = t instanceof java.lang.reflect.InvocationTargetException ? t.getCause() : t;
            System.err.println("[streamshard] ERROR io.streamshard - streamshard: the agent could not start (" + cause
                    + "); nothing was changed, the application runs stock (serial)");
        }
    }

    /** Whether {@code spec} ({@code java.specification.version}: "1.8", "11", "25") is Java 11 or later. */
    static boolean supported(String spec) {
        if (spec == null || spec.startsWith("1.")) {
            return false;
        }
        try {
            int dot = spec.indexOf('.');
            return Integer.parseInt(dot < 0 ? spec : spec.substring(0, dot)) >= 11;
        } catch (NumberFormatException e) {
            return false;
        }
    }
}
