package io.streamshard.agent;

import static net.bytebuddy.matcher.ElementMatchers.isConstructor;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.namedOneOf;
import static net.bytebuddy.matcher.ElementMatchers.takesArgument;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import java.util.List;
import java.util.stream.Collectors;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.matcher.ElementMatcher;
import net.bytebuddy.pool.TypePool;

/**
 * One instrumentation point: a method (or constructor) of a Kafka Streams class with an exact
 * parameter list, the advice for it, and the fields the advice reads. The same description is
 * used to check the Kafka Streams version in use and to install the advice, so what was checked
 * is exactly what is installed.
 *
 * <p>A parameter may name alternatives, {@code a.B|c.B} (a class that moved between versions). A
 * hook may apply only to some versions: {@link #onlyIf} names a method whose presence (or absence)
 * selects it, so that for every version exactly the hooks it needs are checked and installed.
 */
final class Hook {
    static final String CONSTRUCTOR = "<init>";

    private final String type;
    private final String method;
    private final List<String> parameters;
    private final String advice;
    private final List<String> fields;
    /** The condition: null, or {type, method, present} with {@link #conditionParameters}. */
    private final String[] condition;

    private final List<String> conditionParameters;

    Hook(String type, String method, List<String> parameters, String advice, List<String> fields) {
        this(type, method, parameters, advice, fields, null, List.of());
    }

    private Hook(
            String type,
            String method,
            List<String> parameters,
            String advice,
            List<String> fields,
            String[] condition,
            List<String> conditionParameters) {
        this.type = type;
        this.method = method;
        this.parameters = parameters;
        this.advice = advice;
        this.fields = fields;
        this.condition = condition;
        this.conditionParameters = conditionParameters;
    }

    /** This hook, only where {@code owner} declares (or, if {@code !present}, lacks) {@code method(params)}. */
    Hook onlyIf(String owner, String method, List<String> params, boolean present) {
        return new Hook(
                type,
                this.method,
                parameters,
                advice,
                fields,
                new String[] {owner, method, Boolean.toString(present)},
                params);
    }

    String type() {
        return type;
    }

    String advice() {
        return advice;
    }

    List<String> fields() {
        return fields;
    }

    /** Whether the Kafka Streams that {@code pool} describes needs this hook. */
    boolean applies(TypePool pool) {
        if (condition == null) {
            return true;
        }
        TypePool.Resolution r = pool.describe(condition[0]);
        boolean has = r.isResolved()
                && !r.resolve()
                        .getDeclaredMethods()
                        .filter(matcher(condition[1], conditionParameters))
                        .isEmpty();
        return has == Boolean.parseBoolean(condition[2]);
    }

    ElementMatcher.Junction<MethodDescription> matcher() {
        return matcher(method, parameters);
    }

    private static ElementMatcher.Junction<MethodDescription> matcher(String method, List<String> parameters) {
        ElementMatcher.Junction<MethodDescription> m = method.equals(CONSTRUCTOR) ? isConstructor() : named(method);
        m = m.and(takesArguments(parameters.size()));
        for (int i = 0; i < parameters.size(); i++) {
            ElementMatcher.Junction<TypeDescription> t =
                    namedOneOf(parameters.get(i).split("\\|"));
            m = m.and(takesArgument(i, t));
        }
        return m;
    }

    String describe() {
        return simple(type) + "." + method + "("
                + parameters.stream().map(Hook::simple).collect(Collectors.joining(", ")) + ")";
    }

    private static String simple(String name) {
        String first = name.split("\\|")[0];
        return first.substring(first.lastIndexOf('.') + 1);
    }
}
