package io.streamshard.examples.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The container example ({@code examples-spring/Dockerfile}) as a container would run it, without
 * a container runtime: its {@code ENV JAVA_TOOL_OPTIONS} and {@code ENTRYPOINT} are read from the
 * file, each container path replaced by the local file its {@code COPY} line takes, and run on the
 * test broker. The agent is attached by JAVA_TOOL_OPTIONS alone, as Kubernetes and container
 * platforms attach agents; every task must run parallel with exact totals.
 */
class ContainerCommandIT {

    @Test
    void theDockerfilesCommandAttachesTheAgentThroughJavaToolOptions() throws Exception {
        Path dockerfile = Path.of("Dockerfile").toAbsolutePath();
        Path context = dockerfile.getParent().getParent(); // built from the repository root
        Map<String, String> copies = new LinkedHashMap<>();
        String toolOptions = null;
        List<String> entrypoint = null;
        for (String line : Files.readAllLines(dockerfile)) {
            Matcher copy = Pattern.compile("^COPY\\s+(\\S+)\\s+(\\S+)\\s*$").matcher(line);
            Matcher env = Pattern.compile("^ENV\\s+JAVA_TOOL_OPTIONS=\"([^\"]*)\"\\s*$")
                    .matcher(line);
            Matcher entry = Pattern.compile("^ENTRYPOINT\\s+\\[(.*)]\\s*$").matcher(line);
            if (copy.matches()) {
                copies.put(
                        copy.group(2),
                        context.resolve(copy.group(1)).normalize().toString());
            } else if (env.matches()) {
                toolOptions = env.group(1);
            } else if (entry.matches()) {
                entrypoint = new ArrayList<>();
                for (String part : entry.group(1).split(",")) {
                    entrypoint.add(part.trim().replaceAll("^\"|\"$", ""));
                }
            }
        }
        assertThat(copies).as(dockerfile.toString()).hasSize(2);
        assertThat(copies.values())
                .as("the Dockerfile copies the jars this build made")
                .containsExactlyInAnyOrder(
                        Path.of(System.getProperty("streamshard.agent.jar"))
                                .normalize()
                                .toString(),
                        Path.of(System.getProperty("streamshard.app.jar"))
                                .normalize()
                                .toString());
        assertThat(toolOptions).as("ENV JAVA_TOOL_OPTIONS in %s", dockerfile).startsWith("-javaagent:");
        assertThat(entrypoint)
                .as("ENTRYPOINT in %s", dockerfile)
                .isNotNull()
                .first()
                .isEqualTo("java");

        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        for (String part : entrypoint.subList(1, entrypoint.size())) {
            command.add(local(part, copies));
        }
        assertThat(command)
                .as("the agent comes from JAVA_TOOL_OPTIONS only")
                .noneMatch(a -> a.startsWith("-javaagent"));
        String log = SpringBootIT.runsEveryTaskParallelWithExactResults(
                command, Map.of("JAVA_TOOL_OPTIONS", local(toolOptions, copies)));
        assertThat(log).contains("Picked up JAVA_TOOL_OPTIONS: -javaagent:");
    }

    /** {@code text} with every container path of a COPY line replaced by its local source. */
    private static String local(String text, Map<String, String> copies) {
        for (Map.Entry<String, String> c : copies.entrySet()) {
            text = text.replace(c.getKey(), c.getValue());
        }
        return text;
    }
}
