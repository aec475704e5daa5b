import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Load for repro.sh: eight transactional producers commit small transactions on every partition
 * of a fresh 4-partition topic for the given seconds (send, flush, a pause of 0-40 ms, commit), so
 * that some commit reaches the coordinator while the broker is going away. A producer that fails
 * is replaced by one with a new transactional id, as a Kafka Streams task that moved to another
 * thread would be: the old producer id never writes those partitions again, so nothing but the
 * coordinator's markers can close what it left open.
 *
 * Usage: java -cp 'KAFKA_LIB/*' HangingTxn.java BOOTSTRAP TOPIC SECONDS
 */
public class HangingTxn {
    private static final int PARTITIONS = 4;
    private static final int PRODUCERS = 8;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        long end = System.currentTimeMillis() + Long.parseLong(args[2]) * 1000;
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all().get();
        }
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < PRODUCERS; i++) {
            int id = i;
            Thread t = new Thread(() -> commitLoop(bootstrap, topic, end, id), "producer-" + id);
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) {
            t.join();
        }
    }

    private static void commitLoop(String bootstrap, String topic, long end, int id) {
        Random pause = new Random(id);
        long commits = 0;
        int generation = 0;
        while (System.currentTimeMillis() < end) {
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put("transactional.id", topic + "-" + id + "-" + generation);
            p.put("key.serializer", StringSerializer.class.getName());
            p.put("value.serializer", StringSerializer.class.getName());
            p.put("max.block.ms", "5000");
            p.put("request.timeout.ms", "3000");
            p.put("delivery.timeout.ms", "5000");
            p.put("transaction.timeout.ms", "10000");
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
                producer.initTransactions();
                while (System.currentTimeMillis() < end) {
                    producer.beginTransaction();
                    for (int partition = 0; partition < PARTITIONS; partition++) {
                        producer.send(new ProducerRecord<>(topic, partition, "k" + id, "v" + commits));
                    }
                    producer.flush();
                    Thread.sleep(pause.nextInt(40));
                    producer.commitTransaction();
                    commits++;
                }
            } catch (InterruptedException e) {
                return;
            } catch (Exception e) {
                generation++;
                System.out.printf("producer %d failed (%s); a new transactional id%n", id, e.getClass().getSimpleName());
                try {
                    Thread.sleep(500);
                } catch (InterruptedException ie) {
                    return;
                }
            }
        }
        System.out.printf("producer %d: %d commits, %d producers replaced%n", id, commits, generation);
    }
}
