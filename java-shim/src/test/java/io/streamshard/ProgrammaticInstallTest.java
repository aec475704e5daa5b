package io.streamshard;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.util.Properties;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.junit.jupiter.api.Test;

/** Runs in its own JVM (surefire reuseForks=false): installs the agent without -javaagent. */
class ProgrammaticInstallTest {

    @Test
    void installBeforeTheFirstKafkaStreamsInstrumentsIt() throws Exception {
        assertThat(StreamShard.install()).isTrue();
        assertThat(StreamShard.install()).as("idempotent").isTrue();
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in").mapValues(v -> v).to("out");
        Properties p = new Properties();
        p.put("application.id", "programmatic-install");
        p.put("bootstrap.servers", "127.0.0.1:1"); // never started: no broker needed
        p.put("streamshard.workers", "2");
        p.put("state.dir", Files.createTempDirectory("streamshard-install").toString());
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            assertThat(StreamShard.active(streams)).isTrue();
        }
    }
}
