package org.apache.kafka.streams.processor.internals;

import io.streamshard.runtime.InlinePolicy;
import org.apache.kafka.common.metrics.Sensor;

/**
 * The one sink of a task's record run times, ns, whichever thread ran the record (the StreamThread
 * inline, a worker, the serial runner for the whole record): the inline policy, and the task's own
 * process-latency sensor (DEBUG) for the records streamshard runs.
 */
final class RecordTimes {
    private final InlinePolicy inline;
    /** The task's process-latency sensor, or null. */
    private final Sensor processLatency;

    RecordTimes(InlinePolicy inline, Sensor processLatency) {
        this.inline = inline;
        this.processLatency = processLatency;
    }

    /**
     * Whether the process-latency sensor records now (its level, DEBUG, is enabled), as stock's
     * {@code maybeMeasureLatency} asks: the time of the whole processor chain for one record.
     */
    boolean measureLatency() {
        return processLatency != null && processLatency.shouldRecord() && processLatency.hasMetrics();
    }

    /** Whether the inline policy wants records' run times (besides {@link #measureLatency}). */
    boolean timing() {
        return inline.timing();
    }

    /** A record ran {@code nanos}; the sensor records it if the record was {@code measured}. */
    void timed(long nanos, boolean measured) {
        if (inline.timing()) {
            inline.timed(nanos);
        }
        if (measured) {
            processLatency.record(nanos);
        }
    }
}
