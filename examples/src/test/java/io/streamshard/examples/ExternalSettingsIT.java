package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * streamshard.* defaults from outside the application, as an operator gives them to an app they
 * do not build: the agent's argument, system properties, and the agent attached through
 * JAVA_TOOL_OPTIONS. The application's own Properties win; a bad value is the same
 * ConfigException a bad application setting is, naming the key and where it came from. A real
 * JVM with the agent jar each time; no broker needed (the instance is created, not started).
 */
class ExternalSettingsIT {
    private static final String JAR = System.getProperty("streamshard.agent.jar");

    /** Runs CreateOnlyMain in a JVM with {@code jvmArgs} and {@code env}; its exit code and output. */
    private static Object[] run(List<String> jvmArgs, Map<String, String> env) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(jvmArgs);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), CreateOnlyMain.class.getName()));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().putAll(env);
        Children.Result r = Children.run(pb, 120);
        return new Object[] {r.exit, r.output};
    }

    @Test
    void theAgentArgumentAndSystemPropertiesAreDefaultsTheApplicationOverrides() throws Exception {
        // CreateOnlyMain sets streamshard.workers=2 itself.
        Object[] r = run(
                List.of(
                        "-javaagent:" + JAR + "=inline.below.us=0,workers=3,drain.timeout.ms=9000",
                        "-Dstreamshard.drain.timeout.ms=5000",
                        "-Dstreamshard.it.unrelated=x"),
                Map.of());
        String out = (String) r[1];
        assertThat(r[0]).as(out).isEqualTo(0);
        assertThat(out)
                .contains("streamshard active: true")
                .contains("streamshard settings: {streamshard.drain.timeout.ms=5000 (system property), "
                        + "streamshard.inline.below.us=0 (agent argument), streamshard.workers=2 (application)}")
                .contains("2 platform workers for create-only");
    }

    @Test
    void theAgentAttachedThroughJavaToolOptionsTakesItsArgument() throws Exception {
        Object[] r =
                run(List.of(), Map.of("JAVA_TOOL_OPTIONS", "-javaagent:" + JAR + "=streamshard.inline.below.us=0"));
        String out = (String) r[1];
        assertThat(r[0]).as(out).isEqualTo(0);
        assertThat(out).contains("streamshard active: true").contains("streamshard.inline.below.us=0 (agent argument)");
    }

    @Test
    void aBadValueFromOutsideIsAConfigExceptionNamingTheKeyAndWhereItCameFrom() throws Exception {
        Object[] r = run(List.of("-javaagent:" + JAR + "=workers=lots"), Map.of());
        String out = (String) r[1];
        assertThat(r[0]).as(out).isNotEqualTo(0);
        assertThat(out)
                .contains("org.apache.kafka.common.config.ConfigException")
                .contains("streamshard.workers")
                .contains("from the agent argument");

        r = run(List.of("-javaagent:" + JAR, "-Dstreamshard.inline.below.us=-1"), Map.of());
        out = (String) r[1];
        assertThat(r[0]).as(out).isNotEqualTo(0);
        assertThat(out)
                .contains("ConfigException")
                .contains("streamshard.inline.below.us")
                .contains("from the system property");

        r = run(List.of("-javaagent:" + JAR + "=inline.below.uss=0"), Map.of());
        out = (String) r[1];
        assertThat(r[0]).as(out).isNotEqualTo(0);
        assertThat(out)
                .contains("ConfigException")
                .contains("streamshard.inline.below.uss")
                .contains("unknown streamshard setting");
    }
}
