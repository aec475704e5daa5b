package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
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
        Files.writeString(
                main,
                "public class Bare { public static void main(String[] a) {"
                        + " System.out.println(\"bare main ran\"); } }");
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        ProcessBuilder p = new ProcessBuilder(List.of(
                java.toString(),
                "-javaagent:" + System.getProperty("streamshard.agent.jar"),
                "-cp",
                dir.toString(),
                main.toString()));
        Children.Result r = Children.run(p, 60);
        String out = r.output;
        assertThat(r.exit).as(out).isZero();
        assertThat(out)
                .contains("bare main ran")
                .doesNotContain("Exception")
                .doesNotContain("ERROR")
                .doesNotContain("WARNING");
    }

    /**
     * A platform the jar has no native library for (here os.arch says ppc64le): one ERROR line at
     * start naming it and the platforms there are, nothing instrumented, the application stock.
     */
    @Test
    void onAPlatformWithoutALibraryTheAgentSaysSoOnceAndTheApplicationRunsStock() throws Exception {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        String out = run(List.of(
                java.toString(),
                "-Dos.arch=ppc64le",
                "-javaagent:" + System.getProperty("streamshard.agent.jar"),
                "-cp",
                System.getProperty("java.class.path"),
                CreateOnlyMain.class.getName()));
        assertThat(out).contains("streamshard active: false");
        assertThat(out.lines().filter(l -> l.contains("ERROR")))
                .singleElement()
                .asString()
                .contains("no native library for Linux/ppc64le")
                .contains(
                        "linux-x86_64, linux-aarch64, linux-x86_64-musl, linux-aarch64-musl, macos-aarch64, macos-x86_64")
                .contains("nothing was changed, the application runs stock (serial)");
    }

    /** Temurin 25, where it is installed (CI machines have it): no warning from the agent. */
    static final Path JDK25 = Path.of(System.getProperty("streamshard.it.jdk25", "/usr/lib/jvm/temurin-25-jdk-amd64"));

    static String run(List<String> cmd) throws Exception {
        Children.Result r = Children.run(new ProcessBuilder(cmd), 120);
        assertThat(r.exit).as(r.output).isZero();
        return r.output;
    }

    @Test
    void onJdk25WithNativeAccessEnabledTheAgentCausesNoWarning() throws Exception {
        Path java = JDK25.resolve("bin/java");
        Assumptions.assumeTrue(Files.isExecutable(java), "no JDK 25 at " + JDK25);
        String out = run(List.of(
                java.toString(),
                "--enable-native-access=ALL-UNNAMED",
                "-javaagent:" + System.getProperty("streamshard.agent.jar"),
                "-cp",
                System.getProperty("java.class.path"),
                CreateOnlyMain.class.getName()));
        assertThat(out).contains("streamshard active: true").doesNotContain("WARNING");
    }

    @Test
    void onJdk25WithoutTheFlagOnlyTheNativeLoadWarnsAndTheAgentNamesTheFlag() throws Exception {
        Path java = JDK25.resolve("bin/java");
        Assumptions.assumeTrue(Files.isExecutable(java), "no JDK 25 at " + JDK25);
        String out = run(List.of(
                java.toString(),
                "-javaagent:" + System.getProperty("streamshard.agent.jar"),
                "-cp",
                System.getProperty("java.class.path"),
                CreateOnlyMain.class.getName()));
        assertThat(out)
                .contains("streamshard active: true")
                .contains("add --enable-native-access=ALL-UNNAMED to the java command")
                .doesNotContain("sun.misc.Unsafe");
        assertThat(out.lines().filter(l -> l.startsWith("WARNING")))
                .allSatisfy(l -> assertThat(l)
                        .containsAnyOf(
                                "restricted method", "System::load", "--enable-native-access", "Restricted methods"));
    }
}
