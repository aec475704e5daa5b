package io.streamshard.bench;

import io.confluent.parallelconsumer.ParallelConsumerOptions;
import io.confluent.parallelconsumer.ParallelConsumerOptions.CommitMode;
import io.confluent.parallelconsumer.ParallelConsumerOptions.ProcessingOrder;
import io.confluent.parallelconsumer.ParallelStreamProcessor;
import io.streamshard.examples.Work;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The benchmark's Parallel Consumer app: the same consume, work, produce as the Kafka Streams
 * BenchApp (value copied to the output topic under its key), with KEY ordering and
 * {@code maxConcurrency} = the worker count. It keeps no state.
 *
 * <pre>
 * PcApp &lt;bootstrap&gt; &lt;group&gt; &lt;input&gt; &lt;output&gt; &lt;work&gt; &lt;alos|eos&gt; &lt;workers&gt;
 * </pre>
 *
 * Under eos it uses Parallel Consumer's transactional producer commit mode. Runs until killed.
 */
public final class PcApp {
    private PcApp() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 7) {
            System.err.println("usage: PcApp <bootstrap> <group> <input> <output> <work> <alos|eos> <workers>");
            System.exit(2);
        }
        String output = args[3];
        Work work = Work.parse(args[4]);
        boolean eos = args[5].equals("eos");
        int workers = Integer.parseInt(args[6]);

        Properties c = new Properties();
        c.put("bootstrap.servers", args[0]);
        c.put("group.id", args[1]);
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        c.put("isolation.level", "read_committed");
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        if (eos) {
            p.put("transactional.id", args[1] + "-tx");
        }
        KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer());
        KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());

        ParallelConsumerOptions<String, String> options = ParallelConsumerOptions.<String, String>builder()
                .ordering(ProcessingOrder.KEY)
                .maxConcurrency(workers)
                .commitMode(
                        eos ? CommitMode.PERIODIC_TRANSACTIONAL_PRODUCER : CommitMode.PERIODIC_CONSUMER_ASYNCHRONOUS)
                .consumer(consumer)
                .producer(producer)
                .build();
        ParallelStreamProcessor<String, String> processor = ParallelStreamProcessor.createEosStreamProcessor(options);
        processor.subscribe(List.of(args[2]));
        processor.pollAndProduce(ctx -> {
            work.run();
            return new ProducerRecord<>(output, ctx.key(), ctx.value());
        });
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            processor.close();
            done.countDown();
        }));
        done.await();
    }
}
