package io.streamshard.agent;

import static net.bytebuddy.matcher.ElementMatchers.isConstructor;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.takesArgument;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import java.util.List;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.matcher.ElementMatcher;

/**
 * One instrumentation point: a method (or constructor) of a Kafka Streams class with an exact
 * parameter list, the advice for it, and the fields the advice reads. The same description is
 * used to check the Kafka Streams version in use and to install the advice, so what was checked
 * is exactly what is installed.
 */
record Hook(String type, String method, List<String> parameters, String advice, List<String> fields) {
    static final String CONSTRUCTOR = "<init>";

    ElementMatcher.Junction<MethodDescription> matcher() {
        ElementMatcher.Junction<MethodDescription> m = method.equals(CONSTRUCTOR)
                ? isConstructor()
                : named(method);
        m = m.and(takesArguments(parameters.size()));
        for (int i = 0; i < parameters.size(); i++) {
            m = m.and(takesArgument(i, named(parameters.get(i))));
        }
        return m;
    }

    String describe() {
        return type.substring(type.lastIndexOf('.') + 1) + "." + method + "(" + String.join(", ", parameters.stream()
                .map(p -> p.substring(p.lastIndexOf('.') + 1)).toList()) + ")";
    }
}
