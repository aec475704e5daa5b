package io.streamshard.runtime;

/** Which {@link RecordTrace} this class loader's Kafka Streams gets: found once, kept. */
final class RecordTraces {
    private RecordTraces() {}

    // This class is defined in each Kafka Streams class loader (a helper): one decision each.
    private static volatile boolean decided;
    private static RecordTrace found;

    static RecordTrace of(ClassLoader kafka) {
        if (!decided) {
            synchronized (RecordTraces.class) {
                if (!decided) {
                    found = OpenTelemetryTrace.find(kafka);
                    decided = true;
                }
            }
        }
        return found;
    }
}
