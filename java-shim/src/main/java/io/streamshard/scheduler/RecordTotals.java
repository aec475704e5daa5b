package io.streamshard.scheduler;

import java.util.concurrent.atomic.LongAdder;

/**
 * How many records streamshard's tasks ran, and where, over every instance in this JVM since it
 * started: on the workers, in a serial region, or inline on their StreamThread. In the agent's
 * own layer (the bootstrap class path) so that there is one set per JVM whatever class loaders
 * hold Kafka Streams, and so that a tool can read it without Kafka on its class path (the
 * conformance suite reads it around every test).
 */
public final class RecordTotals {
    private static final LongAdder ON_WORKERS = new LongAdder();
    private static final LongAdder SERIAL_PARTS = new LongAdder();
    private static final LongAdder INLINE = new LongAdder();

    private RecordTotals() {}

    /** A record's parallel part ran on a worker. */
    public static void ranOnWorker() {
        ON_WORKERS.increment();
    }

    /** A record's forwards into its task's serial region ran. */
    public static void ranSerialPart() {
        SERIAL_PARTS.increment();
    }

    /** A record of a streamshard task ran whole on its StreamThread. */
    public static void ranInline() {
        INLINE.increment();
    }

    /** {records whose parallel part ran on a worker, records whose serial part ran, records run inline}. */
    public static long[] snapshot() {
        return new long[] {ON_WORKERS.sum(), SERIAL_PARTS.sum(), INLINE.sum()};
    }
}
