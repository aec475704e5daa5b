package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The agent never breaks the JVM it is given: with nothing but the JDK on the class path (no
 * Kafka, no SLF4J) the application starts, runs and exits as without it, and the agent says
 * nothing on the way. No broker needed.
 */
class AgentStartIT {

    @Test
    void aJvmWithTheAgentAndNothingElseOnTheClassPathRunsNormally() throws Exception {
        Path dir = Files.createTempDirectory("streamshard-bare");
        Path main = dir.resolve("Bare.java");
        Files.writeString(main, "public class Bare { public static void main(String[] a) {"
                + " System.out.println(\"bare main ran\"); } }");
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process p = new ProcessBuilder(List.of(java.toString(), "-javaagent:" + System.getProperty("streamshard.agent.jar"),
                "-cp", dir.toString(), main.toString())).redirectErrorStream(true).start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out).contains("bare main ran").doesNotContain("Exception").doesNotContain("ERROR")
                .doesNotContain("WARNING");
    }
}
