package io.streamshard.agent;

import static io.streamshard.agent.StreamShardAgent.P;

import java.util.List;

/**
 * Where the agent hooks into AbstractTask (StreamTask's superclass): a task closed dirty and
 * revived in place goes back to streamshard. The advice is {@code
 * org.apache.kafka.streams.processor.internals.AbstractTaskAdvice}.
 */
final class AbstractTaskHooks {
    private AbstractTaskHooks() {}

    static final List<Hook> HOOKS =
            List.of(new Hook(P + "AbstractTask", "revive", List.of(), P + "AbstractTaskAdvice$Revive", List.of()));
}
