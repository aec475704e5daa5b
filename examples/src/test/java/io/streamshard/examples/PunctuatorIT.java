package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.StreamShard;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.junit.jupiter.api.Test;

/**
 * Wall-clock and stream-time punctuators in a parallel task run only while none of that task's
 * records is running (each fails without the drain before punctuation).
 */
class PunctuatorIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");

    @Test
    void wallClockPunctuatorRunsOnADrainedTask() throws Exception {
        punctuatorRunsOnADrainedTask(PunctuationType.WALL_CLOCK_TIME, "punct");
    }

    /** Stream time advances as records are dequeued (OrderProducer stamps them as it sends). */
    @Test
    void streamTimePunctuatorRunsOnADrainedTask() throws Exception {
        punctuatorRunsOnADrainedTask(PunctuationType.STREAM_TIME, "stpunct");
    }

    private void punctuatorRunsOnADrainedTask(PunctuationType type, String name) throws Exception {
        String suffix = Inputs.suffix(name);
        String input = name + "-in" + suffix;
        OrderProducer.createTopics(BOOTSTRAP, 2, List.of(input));
        // Timestamps 1 ms apart: stream time then spans 4 s, so the 2 ms stream-time punctuator is
        // due at almost every punctuation check (records stamped by a fast producer span only a
        // few ms, which left as few as 4 stream-time punctuations in CI on 4.4).
        long base = System.currentTimeMillis() - 10_000;
        Inputs.produce(
                BOOTSTRAP,
                4_000,
                i -> new ProducerRecord<>(input, null, base + i, "c" + (i % 300), Integer.toString(i)));
        Map<String, AtomicInteger> runningByTask = new ConcurrentHashMap<>();
        AtomicInteger punctuations = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        AtomicReference<String> firstOverlap = new AtomicReference<>();
        StreamsBuilder b = new StreamsBuilder();
        b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .process(
                        () -> new Processor<String, String, Void, Void>() {
                            private AtomicInteger running;

                            @Override
                            public void init(ProcessorContext<Void, Void> context) {
                                running = runningByTask.computeIfAbsent(
                                        context.taskId().toString(), k -> new AtomicInteger());
                                context.schedule(
                                        Duration.ofMillis(type == PunctuationType.STREAM_TIME ? 2 : 20), type, ts -> {
                                            punctuations.incrementAndGet();
                                            int r = running.get();
                                            if (r != 0) {
                                                overlaps.incrementAndGet();
                                                firstOverlap.compareAndSet(
                                                        null, r + " records running in " + context.taskId());
                                            }
                                        });
                            }

                            @Override
                            public void process(Record<String, String> record) {
                                running.incrementAndGet();
                                Probe.sleep(4);
                                running.decrementAndGet();
                            }
                        },
                        Named.as("punctuated"));
        Properties p = EnrichmentApp.config(BOOTSTRAP, "it" + suffix);
        p.put("streamshard.workers", "16");
        p.put("streamshard.parallel.processors", "punctuated");
        // Small polls: the StreamThread goes round its loop (and so past punctuation) often, rather
        // than handing a whole poll's records to the workers and punctuating once per poll (3.9 and
        // 4.0 reached only 5 stream-time punctuations in CI with the default 1,000).
        p.put("max.poll.records", "50");
        p.put("state.dir", Files.createTempDirectory("streamshard-it").toString());
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            streams.start();
            Demo.waitForCommitted(BOOTSTRAP, "it" + suffix, input, 4_000, Duration.ofMinutes(2), () -> {});
            assertThat(StreamShard.explain(streams))
                    .hasSize(2)
                    .allSatisfy((t, d) -> assertThat(d).isEqualTo("parallel"));
        }
        System.out.printf("%s punctuator: %d punctuations%n", type, punctuations.get());
        assertThat(punctuations.get()).isGreaterThan(5);
        assertThat(overlaps.get())
                .as("punctuations that overlapped records: first %s", firstOverlap.get())
                .isZero();
    }
}
