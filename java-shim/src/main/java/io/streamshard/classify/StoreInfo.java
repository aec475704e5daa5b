package io.streamshard.classify;

/** A state store of a task, by what its layers are. */
public record StoreInfo(String name, Kind kind) {
    public enum Kind {
        /** A plain or timestamped key-value store. */
        KEY_VALUE,
        VERSIONED,
        WINDOW,
        SESSION,
        /** A time-ordered buffer: suppress, a stream-table join's grace period. */
        BUFFER,
        /** A store with a record cache layer. */
        CACHED,
        /** None of the above (a custom store type). */
        OTHER
    }
}
