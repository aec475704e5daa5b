package org.apache.kafka.streams.processor.internals;

/**
 * The foreign-key join's per-record memo, kept per thread. Kafka Streams'
 * {@code SubscriptionSendProcessorSupplier$UnbindChangeProcessor} keeps the hash of the record it
 * is processing in an instance field ({@code recordHash}): {@code process} clears it, and the
 * first subscription it forwards fills it. One processor instance serves every thread of a
 * parallel task, so two records of different keys would read each other's hash and send the
 * wrong one (the response would then be dropped as stale, or joined to the wrong row). Every read
 * and write of that field is routed here instead (a member substitution), into a slot of the
 * calling thread.
 *
 * <p>The slot remembers which processor wrote it: a read by another instance finds nothing, and
 * the processor then computes the hash again, as it does after its own reset (the hash is a
 * function of the record's value alone). So what a processor reads is what the field would hold
 * if that processor ran alone on this thread, which is what stock code sees.
 */
public final class StreamShardForeignKeys {
    private StreamShardForeignKeys() {}

    /** The calling thread's memo: the processor that wrote it last, and its value. */
    private static final class Memo {
        Object owner;
        long[] hash;
    }

    private static final ThreadLocal<Memo> MEMO = ThreadLocal.withInitial(Memo::new);

    /** A read of {@code owner.recordHash}. */
    public static long[] readRecordHash(Object owner) {
        Memo m = MEMO.get();
        return m.owner == owner ? m.hash : null;
    }

    /** A write of {@code owner.recordHash}; a cleared memo forgets its owner too. */
    public static void writeRecordHash(Object owner, long[] hash) {
        Memo m = MEMO.get();
        m.owner = hash == null ? null : owner;
        m.hash = hash;
    }
}
