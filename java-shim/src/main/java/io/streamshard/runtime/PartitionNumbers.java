package io.streamshard.runtime;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A task's partitions numbered 0, 1, 2... in the order of their first record, as the scheduler
 * registration knows them. One thread numbers (the task's StreamThread); any thread may read (the
 * status listener).
 */
public final class PartitionNumbers<P> {
    private final Map<P, Integer> numbers = new ConcurrentHashMap<>();

    /**
     * The partition's number, assigned at its first record. Only one thread assigns, so a plain
     * get-then-put is enough: no capturing lambda, no compute lock on the record path.
     */
    public int numberOf(P partition) {
        Integer n = numbers.get(partition);
        if (n == null) {
            n = numbers.size();
            numbers.put(partition, n);
        }
        return n;
    }

    /** The partition's number, or null before its first record. */
    public Integer get(P partition) {
        return numbers.get(partition);
    }
}
