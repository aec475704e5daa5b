package io.streamshard.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class CommitOrderTest {
    private final List<String> sent = new ArrayList<>();
    private final CommitOrder<String> order = new CommitOrder<>(sent::add);

    @Test
    void onlyTheFinishedPrefixOfTheDequeueOrderRetires() {
        CommitOrder.Entry<String> a = order.append(0, 10, 100);
        CommitOrder.Entry<String> b = order.append(0, 11, 90);
        CommitOrder.Entry<String> c = order.append(0, 12, 120);
        b.finish();
        c.finish();
        assertThat(order.retire()).as("b and c wait for a").isZero();
        assertThat(order.firstUnretired(0).offset()).isEqualTo(10);
        assertThat(order.firstUnretired(0).partitionTimeBefore()).isEqualTo(100);
        a.finish();
        assertThat(order.retire()).isEqualTo(3);
        assertThat(order.firstUnretired(0)).as("all retired").isNull();
        assertThat(order.backlog()).isZero();
    }

    @Test
    void aRecordOfAnotherPartitionHoldsTheOnesDequeuedAfterIt() {
        // A co-partitioned join: partition 1's record was dequeued between two of partition 0.
        CommitOrder.Entry<String> a = order.append(0, 5, 1);
        CommitOrder.Entry<String> x = order.append(1, 70, 2);
        CommitOrder.Entry<String> b = order.append(0, 6, 3);
        a.finish();
        b.finish();
        assertThat(order.retire()).isEqualTo(1);
        assertThat(order.firstUnretired(0).offset())
                .as("b is after the running x")
                .isEqualTo(6);
        assertThat(order.firstUnretired(0).partitionTimeBefore()).isEqualTo(3);
        assertThat(order.firstUnretired(1).offset()).isEqualTo(70);
        x.finish();
        assertThat(order.retire()).isEqualTo(2);
        assertThat(order.firstUnretired(0)).isNull();
        assertThat(order.firstUnretired(1)).isNull();
        assertThat(order.firstUnretired(7)).as("a partition never seen").isNull();
    }

    @Test
    void heldSendsAreReleasedInDequeueOrderWhenTheirRecordRetires() {
        CommitOrder.Entry<String> a = order.append(0, 1, 1);
        CommitOrder.Entry<String> b = order.append(0, 2, 1);
        b.hold("b1", 10);
        b.hold("b2", 20);
        b.finish();
        a.hold("a1", 5);
        assertThat(order.heldSends()).isEqualTo(3);
        assertThat(order.heldBytes()).isEqualTo(35);
        order.retire();
        assertThat(sent).as("a still runs").isEmpty();
        a.finish();
        order.retire();
        assertThat(sent).containsExactly("a1", "b1", "b2");
        assertThat(order.heldSends()).isZero();
        assertThat(order.heldBytes()).isZero();
    }

    @Test
    void clearForgetsWhatDidNotRetireAndNeverSendsIt() {
        CommitOrder.Entry<String> a = order.append(0, 1, 1);
        CommitOrder.Entry<String> b = order.append(0, 2, 1);
        b.hold("b1", 10);
        b.finish();
        order.clear();
        a.finish();
        assertThat(order.retire()).isZero();
        assertThat(sent).isEmpty();
        assertThat(order.backlog()).isZero();
        assertThat(order.heldBytes()).isZero();
        assertThat(order.firstUnretired(0)).isNull();
    }
}
