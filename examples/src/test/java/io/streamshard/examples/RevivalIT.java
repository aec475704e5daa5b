package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.StreamShard;
import java.nio.file.Files;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.errors.TaskCorruptedException;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.junit.jupiter.api.Test;

/**
 * A task that Kafka Streams finds corrupted is closed dirty and revived in place (the same task
 * object, re-initialized from its changelog and committed offsets): it must run parallel again,
 * and lose nothing. The corruption is a {@code TaskCorruptedException} thrown once, on a worker,
 * by the slow step. At-least-once: under exactly-once Kafka Streams (4.3) follows an active task's
 * corruption with a rebalance that closes the revived object and creates the task anew (which the
 * agent classifies like any new task), and with this trigger stock itself then does not reprocess
 * the records after the committed offset, so that path cannot be compared.
 */
class RevivalIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final int RECORDS = 2_000;
    private static final int KEYS = 100;
    private static final int CORRUPT_AT = 600;

    @Test
    void aTaskRevivedAfterCorruptionRunsParallelAgainAndLosesNothing() throws Exception {
        String suffix = Inputs.suffix("revive");
        String in = "revive-in" + suffix;
        String out = "revive-out" + suffix;
        String appId = "it" + suffix;
        OrderProducer.createTopics(BOOTSTRAP, 2, List.of(in, out));
        Map<String, Long> expected = new HashMap<>();
        for (int i = 0; i < RECORDS; i++) {
            expected.merge("k" + (i % KEYS), 1L, Long::sum);
        }
        Inputs.produce(BOOTSTRAP, RECORDS, i -> new ProducerRecord<>(in, "k" + (i % KEYS), Integer.toString(i)));

        AtomicBoolean corrupted = new AtomicBoolean();
        Set<String> threadsAfter = ConcurrentHashMap.newKeySet();
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .processValues(
                        () -> new FixedKeyProcessor<String, String, String>() {
                            private FixedKeyProcessorContext<String, String> ctx;

                            @Override
                            public void init(FixedKeyProcessorContext<String, String> c) {
                                ctx = c;
                            }

                            @Override
                            public void process(FixedKeyRecord<String, String> r) {
                                int i = Integer.parseInt(r.value());
                                LockSupport.parkNanos(Duration.ofMillis(1).toNanos()); // the slow step
                                if (i == CORRUPT_AT && corrupted.compareAndSet(false, true)) {
                                    TaskId task = ctx.taskId();
                                    throw new TaskCorruptedException(Set.of(task));
                                }
                                if (corrupted.get() && i > CORRUPT_AT + 200) {
                                    threadsAfter.add(Thread.currentThread().getName());
                                }
                                ctx.forward(r);
                            }
                        },
                        Named.as("slow"))
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .count()
                .toStream()
                .to(out, Produced.with(Serdes.String(), Serdes.Long()));
        Properties p = EnrichmentApp.config(BOOTSTRAP, appId);
        p.put("streamshard.workers", "16");
        p.put("streamshard.parallel.processors", "slow");
        p.put("streamshard.inline.below.us", "0");
        p.put("state.dir", Files.createTempDirectory("streamshard-revive").toString());
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            streams.start();
            Demo.waitForCommitted(
                    BOOTSTRAP,
                    appId,
                    in,
                    RECORDS,
                    Duration.ofMinutes(2),
                    () -> assertThat(streams.state()).isNotEqualTo(KafkaStreams.State.ERROR));
            assertThat(corrupted).as("the task was corrupted once").isTrue();
            assertThat(StreamShard.explain(streams))
                    .allSatisfy((task, d) -> assertThat(d).isEqualTo("parallel"));
        }
        assertThat(threadsAfter)
                .as("threads that ran records after the revival")
                .isNotEmpty()
                .allSatisfy(t -> assertThat(t).contains("streamshard-worker-"));

        Map<String, Long> last = new HashMap<>();
        for (ConsumerRecord<String, Long> r : Demo.readAll(BOOTSTRAP, out, new LongDeserializer())) {
            last.put(r.key(), r.value());
        }
        // At-least-once: records after the last commit before the corruption may count twice, none less.
        assertThat(last.keySet()).isEqualTo(expected.keySet());
        expected.forEach(
                (k, n) -> assertThat(last.get(k)).as("final count of %s", k).isGreaterThanOrEqualTo(n));
    }
}
