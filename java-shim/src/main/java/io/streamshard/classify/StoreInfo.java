package io.streamshard.classify;

import java.util.Objects;

/** A state store of a task, by what its layers are. */
public final class StoreInfo {
    private final String name;
    private final Kind kind;

    public StoreInfo(String name, Kind kind) {
        this.name = name;
        this.kind = kind;
    }

    public String name() {
        return name;
    }

    public Kind kind() {
        return kind;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof StoreInfo)) {
            return false;
        }
        StoreInfo other = (StoreInfo) o;
        return Objects.equals(name, other.name) && Objects.equals(kind, other.kind);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, kind);
    }

    @Override
    public String toString() {
        return "StoreInfo[name=" + name + ", kind=" + kind + "]";
    }

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
