package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.StreamShard;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.junit.jupiter.api.Test;

/** A record that throws on a worker goes through the app's processing-exception handler as inline. */
class ErrorsIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final int RECORDS = 300;

    /** The poison record is the 100th; the others are plain numbers. */
    private static String[] topics(String name) throws Exception {
        String suffix = Inputs.suffix(name);
        String in = "errors-in" + suffix;
        String out = "errors-out" + suffix;
        OrderProducer.createTopics(BOOTSTRAP, 4, List.of(in, out));
        Inputs.produce(BOOTSTRAP, RECORDS,
                i -> new ProducerRecord<>(in, "k" + (i % 20), i == 99 ? "poison" : Integer.toString(i)));
        return new String[] {in, out, "it" + suffix};
    }

    private static KafkaStreams app(String in, String out, String appId, boolean continueOnError) throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .mapValues(v -> {
                    if (v.equals("poison")) {
                        throw new IllegalArgumentException("poison record");
                    }
                    return Integer.toString(Integer.parseInt(v) * 2);
                })
                .to(out, Produced.with(Serdes.String(), Serdes.String()));
        Properties p = EnrichmentApp.config(BOOTSTRAP, appId);
        p.put("state.dir", java.nio.file.Files.createTempDirectory("streamshard-it").toString());
        if (continueOnError) {
            p.put("processing.exception.handler", LogAndContinueProcessingExceptionHandler.class.getName());
        }
        return new KafkaStreams(b.build(), p);
    }

    @Test
    void logAndContinueSkipsThePoisonRecordAndGoesOn() throws Exception {
        String[] t = topics("continue");
        try (KafkaStreams streams = app(t[0], t[1], t[2], true)) {
            streams.start();
            Demo.waitForCommitted(BOOTSTRAP, t[2], t[0], RECORDS, Duration.ofMinutes(2),
                    () -> assertThat(streams.state()).isNotEqualTo(KafkaStreams.State.ERROR));
            assertThat(StreamShard.explain(streams)).allSatisfy((task, d) -> assertThat(d).isEqualTo("parallel"));
        }
        assertThat(Demo.readAll(BOOTSTRAP, t[1], new StringDeserializer())).hasSize(RECORDS - 1);
    }

    @Test
    void logAndFailFailsTheStreamThreadAsStockDoes() throws Exception {
        String[] t = topics("fail");
        Throwable root;
        try (KafkaStreams streams = app(t[0], t[1], t[2], false)) {
            root = Inputs.runUntilError(streams, Duration.ofMinutes(2), () -> {});
        }
        boolean found = Inputs.causedBy(root,
                c -> c instanceof IllegalArgumentException && "poison record".equals(c.getMessage()));
        assertThat(found).as("the poison record's exception is in the cause chain of %s", root).isTrue();
    }
}
