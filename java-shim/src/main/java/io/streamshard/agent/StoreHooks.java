package io.streamshard.agent;

import static io.streamshard.agent.StreamShardAgent.P;

import java.util.List;

/**
 * Where the agent hooks into the key-value stores (CachingKeyValueStore, InMemoryKeyValueStore): one row per advised method (exact parameters, the
 * fields the advice reads, the versions it applies to); the advice classes, named after the
 * methods, are {@code org.apache.kafka.streams.processor.internals.StoreAdvice}.
 */
final class StoreHooks {
    private StoreHooks() {}

    static final String CACHING_KV = "org.apache.kafka.streams.state.internals.CachingKeyValueStore";
    static final String IN_MEMORY_KV = "org.apache.kafka.streams.state.internals.InMemoryKeyValueStore";
    private static final String BYTES = "org.apache.kafka.common.utils.Bytes";
    private static final String ADVICE = P + "StoreAdvice$";

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
                    List.of()));
}
