package io.streamshard.examples;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Reads the enriched output and compares it with the input: which (customer, seq) are missing,
 * where a customer's sequence skipped forward (a replay after a crash or rebalance may go back,
 * never skip), and which appear twice.
 */
record AtLeastOnceCheck(List<String> missing, List<String> skips, List<String> duplicates) {

    static AtLeastOnceCheck of(String bootstrap, String enrichedTopic, OrderProducer.Expected expected)
            throws Exception {
        Set<String> seen = new HashSet<>();
        Map<String, Long> last = new HashMap<>();
        List<String> skips = new ArrayList<>();
        List<String> duplicates = new ArrayList<>();
        for (ConsumerRecord<String, String> r : Demo.readAll(bootstrap, enrichedTopic, new StringDeserializer())) {
            long seq = Long.parseLong(r.value().split(",")[0]);
            long prev = last.getOrDefault(r.key(), 0L);
            if (seq > prev + 1) {
                skips.add(r.key() + ": " + seq + " after " + prev);
            }
            last.put(r.key(), seq);
            if (!seen.add(r.key() + "#" + seq)) {
                duplicates.add(r.key() + "#" + seq);
            }
        }
        List<String> missing = new ArrayList<>();
        expected.counts().forEach((key, n) -> {
            for (long s = 1; s <= n; s++) {
                if (!seen.contains(key + "#" + s)) {
                    missing.add(key + "#" + s);
                }
            }
        });
        return new AtLeastOnceCheck(missing, skips, duplicates);
    }
}
