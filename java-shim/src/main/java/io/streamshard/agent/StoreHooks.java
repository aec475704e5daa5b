package io.streamshard.agent;

import static io.streamshard.agent.StreamShardAgent.P;

import java.util.List;

/**
 * Where the agent hooks into the stores (CachingKeyValueStore, InMemoryKeyValueStore, the read-write decorators): one row per advised method (exact parameters, the
 * fields the advice reads, the versions it applies to); the advice classes, named after the
 * methods, are {@code org.apache.kafka.streams.processor.internals.StoreAdvice}.
 */
final class StoreHooks {
    private StoreHooks() {}

    static final String CACHING_KV = "org.apache.kafka.streams.state.internals.CachingKeyValueStore";
    static final String IN_MEMORY_KV = "org.apache.kafka.streams.state.internals.InMemoryKeyValueStore";
    private static final String BYTES = "org.apache.kafka.common.utils.Bytes";
    private static final String ADVICE = P + "StoreAdvice$";
    /** The stores a processor gets from its context: every write it makes goes through one of these. */
    private static final String DECORATOR = P + "AbstractReadWriteDecorator$";

    static final String KV_DECORATOR = DECORATOR + "KeyValueStoreReadWriteDecorator";
    private static final String VERSIONED_DECORATOR = DECORATOR + "VersionedKeyValueStoreReadWriteDecorator";
    private static final String WINDOW_DECORATOR = DECORATOR + "WindowStoreReadWriteDecorator";
    private static final String SESSION_DECORATOR = DECORATOR + "SessionStoreReadWriteDecorator";
    private static final String OBJECT = "java.lang.Object";
    private static final String WINDOWED = "org.apache.kafka.streams.kstream.Windowed";

    static final List<Hook> HOOKS = List.of(
            new Hook(
                    CACHING_KV,
                    "putInternal",
                    List.of(BYTES, "byte[]"),
                    ADVICE + "CachingPutInternal",
                    List.of("streamThread", "flushListener", "sendOldValues", "cacheName", "position")),
            new Hook(CACHING_KV, "put", List.of(BYTES, "byte[]"), ADVICE + "CachingWriteDone", List.of("streamThread")),
            new Hook(
                    CACHING_KV,
                    "putIfAbsent",
                    List.of(BYTES, "byte[]"),
                    ADVICE + "CachingWriteDone",
                    List.of("streamThread")),
            new Hook(
                    CACHING_KV,
                    "putAll",
                    List.of("java.util.List"),
                    ADVICE + "CachingWriteDone",
                    List.of("streamThread")),
            new Hook(CACHING_KV, "delete", List.of(BYTES), ADVICE + "CachingWriteDone", List.of("streamThread")),
            new Hook(
                    IN_MEMORY_KV,
                    "getKeyValueIterator",
                    List.of("java.util.Set", "boolean"),
                    ADVICE + "InMemoryIterator",
                    List.of()),
            new Hook(IN_MEMORY_KV, "reverseAll", List.of(), ADVICE + "InMemoryIterator", List.of()),
            new Hook(
                    IN_MEMORY_KV,
                    "prefixScan",
                    List.of("java.lang.Object", "org.apache.kafka.common.serialization.Serializer"),
                    ADVICE + "InMemoryIterator",
                    List.of()),
            write(KV_DECORATOR, "put", OBJECT, OBJECT),
            write(KV_DECORATOR, "putIfAbsent", OBJECT, OBJECT),
            write(KV_DECORATOR, "putAll", "java.util.List"),
            write(KV_DECORATOR, "delete", OBJECT),
            write(VERSIONED_DECORATOR, "put", OBJECT, OBJECT, "long"),
            write(VERSIONED_DECORATOR, "delete", OBJECT, "long"),
            write(WINDOW_DECORATOR, "put", OBJECT, OBJECT, "long"),
            write(SESSION_DECORATOR, "put", WINDOWED, OBJECT),
            write(SESSION_DECORATOR, "remove", WINDOWED));

    /** A processor's store write: an effect of its record (no retry after it). */
    private static Hook write(String decorator, String method, String... parameters) {
        return new Hook(decorator, method, List.of(parameters), ADVICE + "Write", List.of());
    }
}
