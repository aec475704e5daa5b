package io.streamshard.examples;

import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The benchmark's Kafka Streams app, run unchanged stock and with {@code -javaagent:streamshard.jar}
 * (see bench/run.py). It copies each input value to the output topic after a simulated piece of
 * work, and optionally counts per key into a counts topic.
 *
 * <pre>
 * BenchApp &lt;bootstrap&gt; &lt;application-id&gt; &lt;input&gt; &lt;output&gt; &lt;counts topic or -&gt;
 *          &lt;work&gt; &lt;alos|eos&gt; &lt;stream threads&gt; &lt;streamshard workers&gt;
 * </pre>
 *
 * The system property {@code bench.commit.interval.ms} overrides {@code commit.interval.ms}. Runs
 * until killed.
 */
public final class BenchApp {
    private BenchApp() {}

    public static Topology topology(String input, String output, String counts, Work work) {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> in = b.stream(input, Consumed.with(Serdes.String(), Serdes.String()));
        in.mapValues(v -> {
            work.run();
            return v;
        }).to(output, Produced.with(Serdes.String(), Serdes.String()));
        if (counts != null) {
            in.groupByKey()
                    .count()
                    .toStream()
                    .mapValues(c -> Long.toString(c))
                    .to(counts, Produced.with(Serdes.String(), Serdes.String()));
        }
        return b.build();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 9) {
            System.err.println("usage: BenchApp <bootstrap> <application-id> <input> <output> <counts|-> <work>"
                    + " <alos|eos> <stream-threads> <streamshard-workers>");
            System.exit(2);
        }
        Work work = Work.parse(args[5]);
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG,
                args[6].equals("eos") ? StreamsConfig.EXACTLY_ONCE_V2 : StreamsConfig.AT_LEAST_ONCE);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(args[7]));
        p.put("auto.offset.reset", "earliest");
        String commitMs = System.getProperty("bench.commit.interval.ms", "");
        if (!commitMs.isEmpty()) {
            // Otherwise Kafka Streams' default: 30 s under at-least-once, 100 ms under exactly-once.
            p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, Integer.parseInt(commitMs));
        }
        p.put(StreamsConfig.STATE_DIR_CONFIG, System.getProperty("java.io.tmpdir") + "/streamshard-bench-" + args[1]);
        // Read only by the agent; stock Kafka Streams ignores unknown keys.
        p.put("streamshard.workers", args[8]);
        String counts = args[4].equals("-") ? null : args[4];
        KafkaStreams streams = new KafkaStreams(topology(args[2], args[3], counts, work), p);
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close();
            done.countDown();
        }));
        streams.start();
        done.await();
    }
}
