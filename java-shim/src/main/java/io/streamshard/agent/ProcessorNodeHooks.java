package io.streamshard.agent;

import static io.streamshard.agent.StreamShardAgent.P;
import static net.bytebuddy.matcher.ElementMatchers.isDeclaredBy;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.takesArgument;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import java.util.List;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.description.type.TypeDescription;

/**
 * Where the agent rewrites ProcessorNode: its {@code process} calls its processor ({@code
 * Processor.process}, {@code FixedKeyProcessor.process}) through StreamShardRetry, which sees a
 * failure before the processing exception handler does (a member substitution; docs/design.md,
 * "Retries"). No advice.
 */
final class ProcessorNodeHooks {
    private ProcessorNodeHooks() {}

    static final String TYPE = P + "ProcessorNode";
    private static final String RETRY = P + "StreamShardRetry";
    private static final String API = "org.apache.kafka.streams.processor.api.";

    static final Rewrite RETRY_CALLS =
            new Rewrite(List.of(TYPE), pool -> Rewrite.missing(pool, List.of(TYPE)), pool -> {
                TypeDescription retry = pool.describe(RETRY).resolve();
                return net.bytebuddy.asm.MemberSubstitution.relaxed()
                        .method(named("process").and(isDeclaredBy(named(API + "Processor"))))
                        .replaceWith(processHelper(retry, API + "Processor"))
                        .method(named("process").and(isDeclaredBy(named(API + "FixedKeyProcessor"))))
                        .replaceWith(processHelper(retry, API + "FixedKeyProcessor"))
                        .on(named("process").and(takesArguments(1)));
            });

    private static MethodDescription processHelper(TypeDescription retry, String processorType) {
        return retry.getDeclaredMethods()
                .filter(named("process").and(takesArgument(0, named(processorType))))
                .getOnly();
    }
}
