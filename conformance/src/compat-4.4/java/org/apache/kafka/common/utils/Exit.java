package org.apache.kafka.common.utils;

/**
 * For running Kafka 4.3's published test utilities on Kafka 4.4 and later, where this class moved
 * to {@code org.apache.kafka.common.utils.internals.Exit} and the 4.4 test utilities are not
 * published where we can get them: the members 4.3's {@code TestUtils} and streams test jar call,
 * each handing over to the class where it lives now. Only on the conformance suite's class path,
 * and only for those runtimes (scripts/conformance.sh; the profile compat-4.4 in pom.xml).
 */
public final class Exit {
    private Exit() {}

    /** What 4.3's callers pass as an exit or halt procedure. */
    public interface Procedure {
        void execute(int statusCode, String message);
    }

    public static void exit(int statusCode) {
        org.apache.kafka.common.utils.internals.Exit.exit(statusCode);
    }

    public static void halt(int statusCode) {
        org.apache.kafka.common.utils.internals.Exit.halt(statusCode);
    }

    public static void addShutdownHook(String name, Runnable runnable) {
        org.apache.kafka.common.utils.internals.Exit.addShutdownHook(name, runnable);
    }

    public static void setExitProcedure(Procedure procedure) {
        org.apache.kafka.common.utils.internals.Exit.setExitProcedure(procedure::execute);
    }

    public static void setHaltProcedure(Procedure procedure) {
        org.apache.kafka.common.utils.internals.Exit.setHaltProcedure(procedure::execute);
    }

    public static void resetExitProcedure() {
        org.apache.kafka.common.utils.internals.Exit.resetExitProcedure();
    }

    public static void resetHaltProcedure() {
        org.apache.kafka.common.utils.internals.Exit.resetHaltProcedure();
    }
}
