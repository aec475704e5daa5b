package io.streamshard;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.agent.AgentState;
import java.nio.file.Files;
import java.util.Properties;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.junit.jupiter.api.Test;

/** Own JVM (reuseForks=false): after a late transformation failure nothing new goes parallel. */
class TransformFailureTest {

    @Test
    void aLateTransformationFailureLeavesNewInstancesStock() throws Exception {
        assertThat(StreamShard.install()).isTrue();
        AgentState.fail("org.example.Simulated: java.lang.VerifyError");
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in").mapValues(v -> v).to("out");
        Properties p = new Properties();
        p.put("application.id", "transform-failure");
        p.put("bootstrap.servers", "127.0.0.1:1"); // never started: no broker needed
        p.put("state.dir", Files.createTempDirectory("streamshard-failure").toString());
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            assertThat(StreamShard.active(streams)).isFalse();
        }
    }
}
