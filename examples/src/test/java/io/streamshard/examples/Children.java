package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.concurrent.TimeUnit;

/**
 * A child JVM run to its end, its output (stdout and stderr) going to a file as it comes. Reading
 * the output only after {@code waitFor} deadlocked once the child had written more than the pipe
 * holds (64 KB): CreateOnlyMain's Kafka logging is about 69 KB on a busy machine, where the admin
 * client logs more retries before close; the child blocked on its write and the test timed out.
 */
final class Children {
    private Children() {}

    /** The finished child's exit code and output. */
    static final class Result {
        final int exit;
        final String output;

        Result(int exit, String output) {
            this.exit = exit;
            this.output = output;
        }
    }

    /** Kills its child JVM when closed, if still alive: a test that fails must not leave one running. */
    static final class Killer implements AutoCloseable {
        private final Process child;

        Killer(Process child) {
            this.child = child;
        }

        @Override
        public void close() throws InterruptedException {
            if (child.isAlive()) {
                child.destroyForcibly().waitFor();
            }
        }
    }

    /**
     * Where the tests run with virtual-thread workers ({@code streamshard.worker.threads=virtual},
     * scripts/test.sh passes it to every JVM through {@code JAVA_TOOL_OPTIONS}): that a child's
     * instance said its workers were virtual, so the test proved what it was run for.
     */
    static void assertWorkerKind(File log) throws Exception {
        if ("virtual".equals(System.getProperty("streamshard.worker.threads"))) {
            assertThat(Files.readString(log.toPath()))
                    .as("the child ran virtual workers; log %s", log)
                    .contains(" virtual workers for ")
                    .doesNotContain(" platform workers for ");
        }
    }

    static Result run(ProcessBuilder pb, long timeoutSeconds) throws Exception {
        File log = File.createTempFile("child-jvm", ".log");
        try {
            Process p = pb.redirectErrorStream(true).redirectOutput(log).start();
            boolean exited = p.waitFor(timeoutSeconds, TimeUnit.SECONDS);
            if (!exited) {
                p.destroyForcibly().waitFor();
            }
            String out = Files.readString(log.toPath(), StandardCharsets.UTF_8);
            assertThat(exited)
                    .as("the child JVM %s did not exit within %d s; its output:%n%s", pb.command(), timeoutSeconds, out)
                    .isTrue();
            return new Result(p.exitValue(), out);
        } finally {
            Files.deleteIfExists(log.toPath());
        }
    }
}
