package io.streamshard.agent;

import static io.streamshard.agent.StreamShardAgent.P;

import java.util.ArrayList;
import java.util.List;
import net.bytebuddy.description.field.FieldDescription;
import net.bytebuddy.description.type.TypeDescription;

/**
 * Where the agent rewrites the foreign-key join's {@code
 * SubscriptionSendProcessorSupplier$UnbindChangeProcessor}: every read and write of its per-record
 * memo {@code recordHash} goes to a slot of the calling thread (StreamShardForeignKeys), so records
 * of different keys running at once never see each other's hash (a member substitution;
 * docs/parallel-safety.md). No advice.
 */
final class SubscriptionSendProcessorSupplierHooks {
    private SubscriptionSendProcessorSupplierHooks() {}

    static final String TYPE =
            "org.apache.kafka.streams.kstream.internals.foreignkeyjoin.SubscriptionSendProcessorSupplier$UnbindChangeProcessor";
    private static final String MEMO = P + "StreamShardForeignKeys";

    static final Rewrite RECORD_HASH = new Rewrite(
            List.of(TYPE),
            pool -> {
                List<String> problems = new ArrayList<>();
                TypeDescription send = Rewrite.describe(pool, TYPE);
                FieldDescription hash = send == null ? null : Rewrite.findField(send, "recordHash");
                if (hash == null
                        || hash.isStatic()
                        || !hash.getType().asErasure().getName().equals("[J")) {
                    problems.add("field " + TYPE.substring(TYPE.lastIndexOf('.') + 1)
                            + ".recordHash not found as a long[] instance field");
                }
                return problems;
            },
            pool -> Rewrite.fieldsThrough(pool.describe(MEMO).resolve(), "recordHash", "RecordHash"));
}
