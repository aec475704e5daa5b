package io.streamshard.examples;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Output topics of a stock run and a streamshard run, compared as the product promises:
 * serial-region outputs record for record, parallel-region outputs as multisets with the same
 * per-key order, tables by their last value per key.
 */
final class OutputCompare {
    private OutputCompare() {}

    /** How an output of the streamshard run must relate to the stock run's. */
    enum Mode {
        /** Serial region: per partition the same records (key, value, timestamp) in the same order. */
        EXACT,
        /** Parallel region: per partition the same multiset of (key, value, timestamp); per key the same values in order. */
        PARALLEL,
        /**
         * As PARALLEL without timestamps: for outputs behind a repartition topic, whose
         * interleaving of upstream tasks (and so which record carries which count) differs from
         * run to run even stock.
         */
        PARALLEL_NO_TS,
        /**
         * The last value per key (a table's final content): for outputs whose intermediate
         * updates depend on timing even stock (repartitioned table aggregates, FK joins,
         * punctuator emissions).
         */
        FINAL
    }

    /** One output record, its value as text (null for a tombstone). */
    record Rec(int partition, long offset, String key, String value, long timestamp) {
        String kvt() {
            return key + " -> " + value + " @" + timestamp;
        }
    }

    static Deserializer<?> deserializer(boolean longValues) {
        return longValues ? new LongDeserializer() : new StringDeserializer();
    }

    /** Every record of {@code topic} (read-committed), ordered by partition then offset. */
    static List<Rec> read(String bootstrap, String topic, boolean longValues) throws Exception {
        List<Rec> out = new ArrayList<>();
        for (ConsumerRecord<String, ?> r : Demo.readAll(bootstrap, topic, deserializer(longValues))) {
            out.add(new Rec(
                    r.partition(),
                    r.offset(),
                    r.key(),
                    r.value() == null ? null : r.value().toString(),
                    r.timestamp()));
        }
        out.sort(Comparator.comparingInt(Rec::partition).thenComparingLong(Rec::offset));
        return out;
    }

    /** Problems found ("" entries never); empty if the streamshard output relates to stock as {@code mode} says. */
    static List<String> compare(Mode mode, List<Rec> stock, List<Rec> shard) {
        List<String> problems = new ArrayList<>();
        if (stock.size() != shard.size() && mode != Mode.FINAL) {
            problems.add("stock wrote " + stock.size() + " records, streamshard " + shard.size());
        }
        switch (mode) {
            case EXACT -> exact(stock, shard, problems);
            case PARALLEL -> parallel(stock, shard, true, problems);
            case PARALLEL_NO_TS -> parallel(stock, shard, false, problems);
            case FINAL -> finalValues(stock, shard, problems);
        }
        return problems;
    }

    private static Map<Integer, List<Rec>> byPartition(List<Rec> recs) {
        Map<Integer, List<Rec>> m = new TreeMap<>();
        for (Rec r : recs) {
            m.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r);
        }
        return m;
    }

    private static void exact(List<Rec> stock, List<Rec> shard, List<String> problems) {
        Map<Integer, List<Rec>> a = byPartition(stock);
        Map<Integer, List<Rec>> b = byPartition(shard);
        for (int p : new TreeSet<>(union(a.keySet(), b.keySet()))) {
            List<Rec> x = a.getOrDefault(p, List.of());
            List<Rec> y = b.getOrDefault(p, List.of());
            int n = Math.min(x.size(), y.size());
            for (int i = 0; i < n; i++) {
                if (!x.get(i).kvt().equals(y.get(i).kvt())) {
                    problems.add("partition " + p + " record " + i + ": stock "
                            + x.get(i).kvt() + ", streamshard " + y.get(i).kvt() + " (" + firstDifferences(x, y, i)
                            + ")");
                    break;
                }
            }
            if (x.size() != y.size()) {
                problems.add("partition " + p + ": stock " + x.size() + " records, streamshard " + y.size());
            }
        }
    }

    private static String firstDifferences(List<Rec> x, List<Rec> y, int from) {
        long differing = 0;
        for (int i = from; i < Math.min(x.size(), y.size()); i++) {
            if (!x.get(i).kvt().equals(y.get(i).kvt())) {
                differing++;
            }
        }
        return differing + " positions differ from there";
    }

    private static void parallel(List<Rec> stock, List<Rec> shard, boolean withTimestamps, List<String> problems) {
        Map<Integer, List<Rec>> a = byPartition(stock);
        Map<Integer, List<Rec>> b = byPartition(shard);
        for (int p : new TreeSet<>(union(a.keySet(), b.keySet()))) {
            Map<String, Integer> x = multiset(a.getOrDefault(p, List.of()), withTimestamps);
            Map<String, Integer> y = multiset(b.getOrDefault(p, List.of()), withTimestamps);
            if (!x.equals(y)) {
                List<String> diff = new ArrayList<>();
                for (String k : new TreeSet<>(union(x.keySet(), y.keySet()))) {
                    int cx = x.getOrDefault(k, 0);
                    int cy = y.getOrDefault(k, 0);
                    if (cx != cy) {
                        diff.add(k + " stock x" + cx + " streamshard x" + cy);
                    }
                }
                problems.add("partition " + p + ": multisets differ in " + diff.size() + " entries, e.g. "
                        + diff.subList(0, Math.min(5, diff.size())));
            }
        }
        Map<String, List<String>> x = perKey(stock);
        Map<String, List<String>> y = perKey(shard);
        List<String> keys = new ArrayList<>();
        for (String k : new TreeSet<>(union(x.keySet(), y.keySet()))) {
            if (!Objects.equals(x.get(k), y.get(k))) {
                keys.add(k);
            }
        }
        if (!keys.isEmpty()) {
            String k = keys.get(0);
            List<String> xs = x.getOrDefault(k, List.of());
            List<String> ys = y.getOrDefault(k, List.of());
            int i = 0;
            while (i < xs.size() && i < ys.size() && Objects.equals(xs.get(i), ys.get(i))) {
                i++;
            }
            problems.add(keys.size() + " keys with a different value sequence, e.g. " + k + " (" + xs.size() + "/"
                    + ys.size() + " values) from value " + i + ": stock " + window(xs, i) + ", streamshard "
                    + window(ys, i));
        }
    }

    private static void finalValues(List<Rec> stock, List<Rec> shard, List<String> problems) {
        Map<String, String> x = lastPerKey(stock);
        Map<String, String> y = lastPerKey(shard);
        List<String> keys = new ArrayList<>();
        for (String k : new TreeSet<>(union(x.keySet(), y.keySet()))) {
            if (!Objects.equals(x.get(k), y.get(k)) || x.containsKey(k) != y.containsKey(k)) {
                keys.add(k);
            }
        }
        if (!keys.isEmpty()) {
            List<String> eg = keys.subList(0, Math.min(5, keys.size())).stream()
                    .map(k -> k + ": stock " + x.get(k) + ", streamshard " + y.get(k))
                    .toList();
            problems.add(keys.size() + " keys with a different last value, e.g. " + eg);
        }
    }

    private static List<String> window(List<String> values, int from) {
        return values.subList(Math.min(from, values.size()), Math.min(from + 3, values.size()));
    }

    static Map<String, String> lastPerKey(List<Rec> recs) {
        Map<String, String> m = new TreeMap<>();
        for (Rec r : recs) {
            m.put(r.key(), r.value());
        }
        return m;
    }

    private static Map<String, Integer> multiset(List<Rec> recs, boolean withTimestamps) {
        Map<String, Integer> m = new HashMap<>();
        for (Rec r : recs) {
            m.merge(withTimestamps ? r.kvt() : r.key() + " -> " + r.value(), 1, Integer::sum);
        }
        return m;
    }

    private static Map<String, List<String>> perKey(List<Rec> recs) {
        Map<String, List<String>> m = new LinkedHashMap<>();
        for (Rec r : recs) {
            m.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.value());
        }
        return m;
    }

    private static <T> Set<T> union(Set<T> a, Set<T> b) {
        Set<T> u = new HashSet<>(a);
        u.addAll(b);
        return u;
    }

    /** Differences between two store snapshots (key → value as text); empty if equal. */
    static List<String> compareStores(String store, Map<String, String> stock, Map<String, String> shard) {
        List<String> keys = new ArrayList<>();
        for (String k : new TreeSet<>(union(stock.keySet(), shard.keySet()))) {
            if (!Objects.equals(stock.get(k), shard.get(k)) || stock.containsKey(k) != shard.containsKey(k)) {
                keys.add(k);
            }
        }
        if (keys.isEmpty()) {
            return List.of();
        }
        List<String> eg = keys.subList(0, Math.min(5, keys.size())).stream()
                .map(k -> k + ": stock " + stock.get(k) + ", streamshard " + shard.get(k))
                .toList();
        return List.of("store " + store + ": " + keys.size() + " of " + stock.size() + "/" + shard.size()
                + " entries differ, e.g. " + eg);
    }
}
