package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Two applications with their own class loaders in one JVM with the agent: each gets its own
 * injected helpers and runs with streamshard, and both share the one native library (loaded once
 * per JVM, by the agent's loader). No broker needed.
 */
class TwoLoadersIT {

    @Test
    void twoApplicationsInTwoClassLoadersEachRunWithStreamshard() throws Exception {
        String jars = Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
                .filter(e -> e.contains("kafka-streams-") || e.contains("kafka-clients-") || e.contains("slf4j-"))
                .filter(e -> !e.contains("test-utils"))
                .collect(Collectors.joining(File.pathSeparator));
        assertThat(jars).contains("kafka-streams-").contains("kafka-clients-");
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        ProcessBuilder p = new ProcessBuilder(List.of(
                java.toString(),
                "-javaagent:" + System.getProperty("streamshard.agent.jar"),
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-Dorg.slf4j.simpleLogger.log.io.streamshard=info",
                "-cp",
                Path.of(TwoLoadersMain.class
                                .getProtectionDomain()
                                .getCodeSource()
                                .getLocation()
                                .toURI())
                        .toString(),
                TwoLoadersMain.class.getName(),
                jars));
        Children.Result r = Children.run(p, 120);
        String out = r.output;
        assertThat(r.exit).as(out).isZero();
        assertThat(out)
                .contains("app 0: active=true api-in-own-loader=true scheduler-shared=true")
                .contains("app 1: active=true api-in-own-loader=true scheduler-shared=true")
                .contains("two loaders done")
                .doesNotContain("cannot instrument")
                .doesNotContain("Exception");
        assertThat(out.lines()
                        .filter(l -> l.contains("agent installed on Kafka Streams"))
                        .count())
                .as("checked once per loader: %s", out)
                .isEqualTo(2);
    }
}
