package io.streamshard.runtime;

/**
 * The seam through which a tracing agent's context of a record follows the record off the
 * StreamThread. Stock Kafka Streams runs a record's code on the StreamThread inside whatever the
 * agent made current there (OpenTelemetry: the record's {@code process} span, started when the
 * record was dequeued and ended when {@code StreamTask.process} returns). streamshard runs that
 * code later, on a worker and in the serial region; through this seam the same context is current
 * there, and the span ends when the record's work has, with its failure.
 *
 * <p>The record path calls it only when an agent was found ({@link #of}); without one a task's
 * trace is null and a record pays one field test. An implementation never throws into the record
 * path. Another agent's context is another implementation of these four methods.
 */
public interface RecordTrace {
    /**
     * On the StreamThread, as a record is handed to the workers: what the record carries (its
     * context, and the end of its span, taken over from the StreamThread, where nothing of it stays
     * current); null if it carries nothing.
     */
    Object handOff();

    /** Makes {@code state}'s context current on this thread; gives what {@link #exit} takes. */
    Object enter(Object state);

    /** On the thread that entered: the context current before {@link #enter} is current again. */
    void exit(Object scope);

    /** The record's work is over (both regions), or it failed with {@code failure}: its span ends. */
    void end(Object state, Throwable failure);

    /**
     * The trace of the tracing agent the application runs with, found through the class loader
     * of Kafka Streams; null if there is none. Decided once per class loader.
     */
    static RecordTrace of(ClassLoader kafka) {
        return RecordTraces.of(kafka);
    }
}
