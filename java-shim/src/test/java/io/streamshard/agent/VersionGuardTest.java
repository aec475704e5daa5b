package io.streamshard.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import net.bytebuddy.ByteBuddy;
import net.bytebuddy.dynamic.ClassFileLocator;
import net.bytebuddy.pool.TypePool;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The install-time check against the real jars of each Kafka Streams version (from Maven Central,
 * see the pom's compat-jars): nothing of the test class path's own Kafka Streams leaks in.
 */
class VersionGuardTest {
    static final String SINCE_41 = "org.apache.kafka.streams.processor.internals.StreamShardCompat$Since41";
    static final String UPTO_40 = "org.apache.kafka.streams.processor.internals.StreamShardCompat$Upto40";

    static File jar(String name) {
        File f = new File(System.getProperty("streamshard.compat.dir"), name + ".jar");
        assertThat(f).exists();
        return f;
    }

    /** streamshard's own compiled classes (target/classes), without the test class path's Kafka. */
    static Path ourClasses() throws Exception {
        return Paths.get(StreamShardAgent.class
                .getProtectionDomain()
                .getCodeSource()
                .getLocation()
                .toURI());
    }

    static ClassFileLocator locator(String streams, String clients) throws Exception {
        return new ClassFileLocator.Compound(
                ClassFileLocator.ForJarFile.of(jar("kafka-streams-" + streams)),
                ClassFileLocator.ForJarFile.of(jar("kafka-clients-" + clients)),
                new ClassFileLocator.ForFolder(ourClasses().toFile()),
                ClassFileLocator.ForJarFile.of(new File(ByteBuddy.class
                        .getProtectionDomain()
                        .getCodeSource()
                        .getLocation()
                        .toURI())),
                ClassFileLocator.ForClassLoader.ofBootLoader());
    }

    static List<KafkaReferences.Ref> index() throws Exception {
        return KafkaReferences.index(StreamShardAgent.class.getClassLoader());
    }

    @ParameterizedTest
    @ValueSource(strings = {"3.9.2", "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0"})
    void everySupportedVersionPassesEveryCheck(String version) throws Exception {
        try (ClassFileLocator l = locator(version, version)) {
            KafkaReferences.Result r = StreamShardAgent.verify(TypePool.Default.of(l), version, index());
            assertThat(r.problems).isEmpty();
            assertThat(r.variants)
                    .containsEntry(
                            "org.apache.kafka.streams.processor.internals.StreamShardCompat",
                            version.startsWith("3.") || version.startsWith("4.0") ? UPTO_40 : SINCE_41);
        }
    }

    /** The hooks that differ by version: exactly the ones each version needs. */
    @ParameterizedTest
    @ValueSource(strings = {"3.9.2", "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0"})
    void eachVersionGetsTheHooksItNeeds(String version) throws Exception {
        boolean before41 = version.startsWith("3.") || version.startsWith("4.0");
        boolean accumulator = version.startsWith("4.2") || version.startsWith("4.4");
        try (ClassFileLocator l = locator(version, version)) {
            List<String> applied = Hooks.applied(TypePool.Default.of(l));
            assertThat(applied.contains("StreamTaskAdvice$PrepareCommit")).isEqualTo(!before41);
            assertThat(applied.contains("StreamTaskAdvice$PrepareCommitUpto40")).isEqualTo(before41);
            assertThat(applied.contains("RecordDeserializerAdvice$Deserialize")).isEqualTo(before41);
            assertThat(applied.stream()
                            .filter("TaskManagerAdvice$ClosingDirty"::equals)
                            .count())
                    .isEqualTo(before41 ? 2 : 0);
            assertThat(applied.contains("StreamTaskAdvice$MaybeAddTerminalE2ELatency"))
                    .isEqualTo(accumulator);
            assertThat(applied)
                    .contains(
                            "StreamTaskAdvice$DoProcess",
                            "ProcessorContextAdvice$ForwardInternal",
                            "StreamTaskAdvice$Constructor",
                            "KafkaStreamsAdvice$Constructor",
                            "AbstractTaskAdvice$Revive");
        }
    }

    @Test
    void theIndexCoversTheHelpersAndTheAdvice() throws Exception {
        List<KafkaReferences.Ref> refs = index();
        assertThat(refs.stream().map(r -> r.from).distinct().collect(Collectors.toList()))
                .contains(
                        "org/apache/kafka/streams/processor/internals/ShardedTask",
                        "org/apache/kafka/streams/processor/internals/StreamTaskAdvice$DoProcess",
                        "org/apache/kafka/streams/processor/internals/StreamShardCompat$Since41",
                        "org/apache/kafka/streams/processor/internals/StreamShardCompat$Upto40$Carrier");
        assertThat(refs.stream().map(KafkaReferences.Ref::line))
                .contains("org/apache/kafka/streams/processor/internals/StreamShardCompat$Since41 METHOD "
                        + "org/apache/kafka/streams/processor/internals/StampedRecord rawKey ()[B");
        List<String> helpers = KafkaReferences.lines(StreamShardAgent.class.getClassLoader(), KafkaReferences.HELPERS);
        assertThat(helpers)
                .contains(
                        "org/apache/kafka/streams/processor/internals/ShardedTask",
                        "io/streamshard/StreamShard",
                        "io/streamshard/config/StreamShardConfig");
        assertThat(helpers)
                .noneMatch(h -> h.startsWith("io/streamshard/agent/")
                        || h.startsWith("io/streamshard/scheduler/")
                        || h.contains("Advice"));
    }

    @Test
    void aVersionOlderThanTheOldestServedIsRefusedWithOneError() throws Exception {
        try (ClassFileLocator l = locator("3.7.2", "3.7.2")) {
            List<String> problems = StreamShardAgent.verify(TypePool.Default.of(l), "3.7.2", index()).problems;
            // Its age, and what the helpers use that it lacks (3.7 has no FailedProcessingException).
            assertThat(problems)
                    .containsExactly(
                            "Kafka Streams 3.7.2 is older than 3.9, the oldest version streamshard serves",
                            "class org.apache.kafka.streams.errors.internals.FailedProcessingException not found");
            String log = stderrOf(() ->
                    assertThat(StreamShardAgent.guard(null, problems, "3.7.2")).isFalse());
            assertThat(log)
                    .contains("ERROR")
                    .contains("cannot instrument Kafka Streams 3.7.2")
                    .contains("older than 3.9")
                    .contains("runs stock");
            assertThat(log.lines().filter(x -> x.contains("ERROR")).count()).isEqualTo(1);
        }
    }

    @Test
    void aMixedClassPathIsAMismatchNotAnException() throws Exception {
        // Kafka Streams 4.4 with kafka-clients 4.3: 4.4's StreamTask takes a LogContext from a package
        // 4.3's clients do not have.
        try (ClassFileLocator l = locator("4.4.0", "4.3.1")) {
            List<String> problems = StreamShardAgent.verify(
                            TypePool.Default.of(l), "4.4.0 (with kafka-clients 4.3.1)", index())
                    .problems;
            assertThat(problems)
                    .anySatisfy(p -> assertThat(p)
                            .contains("StreamTask.<init>")
                            .contains("org.apache.kafka.common.utils.internals.LogContext"));
        }
    }

    @Test
    void theVersionIsReadFromTheJarsWithoutLoadingAClass() throws Exception {
        try (URLClassLoader l = new URLClassLoader(
                new URL[] {
                    jar("kafka-streams-4.4.0").toURI().toURL(),
                    jar("kafka-clients-4.3.1").toURI().toURL()
                },
                ClassLoader.getPlatformClassLoader())) {
            assertThat(KafkaVersion.of(l)).isEqualTo("4.4.0 (with kafka-clients 4.3.1)");
        }
        try (URLClassLoader l = new URLClassLoader(
                new URL[] {
                    jar("kafka-streams-3.9.2").toURI().toURL(),
                    jar("kafka-clients-3.9.2").toURI().toURL()
                },
                ClassLoader.getPlatformClassLoader())) {
            assertThat(KafkaVersion.of(l)).isEqualTo("3.9.2");
        }
        assertThat(KafkaVersion.older("3.8.1", "3.9")).isTrue();
        assertThat(KafkaVersion.older("4.5.0", "3.9")).isFalse();
        assertThat(KafkaVersion.older("(version unknown)", "3.9")).isFalse();
        assertThat(KafkaVersion.minor("4.4.0 (with kafka-clients 4.3.1)")).isEqualTo("4.4");
    }

    /** The agent's own layer is compiled for Java 11, its Premain-Class for Java 8. */
    @Test
    void classFileVersions() throws Exception {
        Path root = ourClasses();
        assertThat(KafkaReferences.majorVersion(Files.readAllBytes(root.resolve("io/streamshard/agent/Premain.class"))))
                .isEqualTo(52);
        try (Stream<Path> files = Files.walk(root)) {
            List<Path> newer = files.filter(p -> p.toString().endsWith(".class"))
                    .filter(p -> {
                        try {
                            return KafkaReferences.majorVersion(Files.readAllBytes(p)) > 55;
                        } catch (IOException e) {
                            throw new UncheckedIOException(e);
                        }
                    })
                    .collect(Collectors.toList());
            assertThat(newer).as("classes newer than Java 11").isEmpty();
        }
    }

    @Test
    void premainRefusesJavaOlderThan11() {
        assertThat(Premain.supported("1.8")).isFalse();
        assertThat(Premain.supported("9")).isFalse();
        assertThat(Premain.supported("10")).isFalse();
        assertThat(Premain.supported("11")).isTrue();
        assertThat(Premain.supported("17")).isTrue();
        assertThat(Premain.supported("25")).isTrue();
        assertThat(Premain.supported(null)).isFalse();
        assertThat(Premain.supported("x")).isFalse();
    }

    static String stderrOf(Runnable r) {
        PrintStream saved = System.err;
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            r.run();
        } finally {
            System.setErr(saved);
        }
        return err.toString(StandardCharsets.UTF_8);
    }
}
