package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.StreamShard;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A producer send error raised by a record that ran on a worker reaches the StreamThread: the
 * producer refuses one oversized output record (its callback stores the error in the StreamThread's
 * shared send exception), some later send or the commit's flush consumes it, and the StreamThread
 * fails with it in the cause chain, exactly as stock does. No offset past the refused record is
 * committed. Run stock and with streamshard, at-least-once and exactly-once, with the same
 * assertions.
 */
class SendErrorIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final int RECORDS = 600;
    private static final int BIG = 200;

    @ParameterizedTest(name = "streamshard={0}, exactly-once={1}")
    @CsvSource({"false,false", "true,false", "false,true", "true,true"})
    void aRefusedSendFailsTheStreamThreadAndCommitsNothingPastIt(boolean streamshard, boolean eos) throws Exception {
        String suffix = Inputs.suffix((streamshard ? "shard" : "stock") + (eos ? "-eos" : ""));
        String in = "senderr-in" + suffix;
        String out = "senderr-out" + suffix;
        String appId = "senderr" + suffix;
        OrderProducer.createTopics(BOOTSTRAP, 1, List.of(in, out));
        Inputs.produce(
                BOOTSTRAP,
                RECORDS,
                i -> new ProducerRecord<>(in, 0, "k" + (i % 40), i == BIG ? "big" : Integer.toString(i)));

        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .mapValues(v -> {
                    EnrichmentApp.remoteScore(v, 2);
                    // 16 KB: more than the producer's max.request.size below, so send() refuses it.
                    return v.equals("big") ? "x".repeat(16 * 1024) : v;
                })
                .to(out, Produced.with(Serdes.String(), Serdes.String()));
        Properties p = EnrichmentApp.config(BOOTSTRAP, appId);
        p.put("state.dir", Files.createTempDirectory("streamshard-it").toString());
        p.put(StreamsConfig.producerPrefix("max.request.size"), 4096);
        p.put("streamshard.enabled", Boolean.toString(streamshard));
        if (eos) {
            p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        }
        p.put("streamshard.workers", "16");

        Throwable root;
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            root = Inputs.runUntilError(streams, Duration.ofMinutes(2), () -> {
                if (streamshard && streams.state() == KafkaStreams.State.RUNNING) {
                    assertThat(StreamShard.explain(streams))
                            .allSatisfy((task, d) -> assertThat(d).isEqualTo("parallel"));
                }
            });
        }
        boolean found = Inputs.causedBy(root, c -> c instanceof RecordTooLargeException);
        assertThat(found)
                .as("the refused send is in the cause chain of %s", root)
                .isTrue();

        Properties ap = new Properties();
        ap.put("bootstrap.servers", BOOTSTRAP);
        try (Admin admin = Admin.create(ap)) {
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(appId)
                    .partitionsToOffsetAndMetadata()
                    .get();
            OffsetAndMetadata c = committed.get(new TopicPartition(in, 0));
            long offset = c == null ? 0 : c.offset();
            assertThat(offset)
                    .as("committed input offset (the refused record is offset %d)", BIG)
                    .isLessThanOrEqualTo(BIG);
        }
    }
}
