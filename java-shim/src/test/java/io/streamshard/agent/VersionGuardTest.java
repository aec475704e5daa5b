package io.streamshard.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import net.bytebuddy.dynamic.ClassFileLocator;
import net.bytebuddy.pool.TypePool;
import org.junit.jupiter.api.Test;

class VersionGuardTest {

    @Test
    void everyHookMatchesTheKafkaStreamsItIsBuiltFor() {
        TypePool pool = TypePool.Default.of(ClassFileLocator.ForClassLoader.of(getClass().getClassLoader()));
        assertThat(StreamShardAgent.check(pool)).isEmpty();
    }

    /** Kafka Streams 3.9.1: prepareCommit() has no boolean, doProcess differs, ... → nothing installed. */
    @Test
    void anOlderKafkaStreamsIsRefusedAsAWholeWithOneErrorNamingWhatDidNotMatch() throws Exception {
        File jar = new File(System.getProperty("streamshard.compat.dir"), "kafka-streams-3.9.1.jar");
        assertThat(jar).exists();
        try (ClassFileLocator locator = new ClassFileLocator.Compound(
                ClassFileLocator.ForJarFile.of(jar), ClassFileLocator.ForClassLoader.ofSystemLoader())) {
            TypePool pool = TypePool.Default.of(locator);
            List<String> problems = StreamShardAgent.check(pool);
            assertThat(problems).anySatisfy(p -> assertThat(p).contains("StreamTask.prepareCommit(boolean) not found"));

            // slf4j-simple logs to stderr: the guard says ERROR once, names the mismatch, installs nothing.
            PrintStream saved = System.err;
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            boolean ok;
            try {
                ok = StreamShardAgent.guard(pool, "3.9.1");
            } finally {
                System.setErr(saved);
            }
            assertThat(ok).isFalse();
            String log = err.toString(StandardCharsets.UTF_8);
            assertThat(log).contains("ERROR").contains("cannot instrument Kafka Streams 3.9.1")
                    .contains("prepareCommit(boolean) not found").contains("runs stock");
            assertThat(log.lines().filter(l -> l.contains("ERROR")).count()).isEqualTo(1);
            assertThat(StreamShardAgent.installed()).isFalse();
        }
    }
}
