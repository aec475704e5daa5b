package io.streamshard.agent;

import static net.bytebuddy.matcher.ElementMatchers.named;

import java.util.List;
import java.util.function.Function;
import net.bytebuddy.asm.AsmVisitorWrapper;
import net.bytebuddy.asm.MemberSubstitution;
import net.bytebuddy.description.field.FieldDescription;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.matcher.ElementMatchers;
import net.bytebuddy.pool.TypePool;

/**
 * A bytecode rewrite of Kafka classes beside the advice: every use of some of their members goes
 * through a helper of streamshard's (a member substitution). Each is declared in the hooks file of
 * the Kafka class it rewrites; like a {@link Hook}, it is checked against the loader's Kafka
 * Streams first ({@link #check}), and all of them install or none does.
 */
final class Rewrite {
    /** The classes rewritten (binary names). */
    final List<String> types;

    private final Function<TypePool, List<String>> check;
    private final Function<TypePool, AsmVisitorWrapper> visitor;

    /**
     * @param check what does not match in the Kafka Streams a pool describes (empty: all does)
     * @param visitor the rewrite, for the Kafka Streams (and helpers) a pool describes
     */
    Rewrite(List<String> types, Function<TypePool, List<String>> check, Function<TypePool, AsmVisitorWrapper> visitor) {
        this.types = List.copyOf(types);
        this.check = check;
        this.visitor = visitor;
    }

    List<String> check(TypePool pool) {
        return check.apply(pool);
    }

    AsmVisitorWrapper visitor(TypePool pool) {
        return visitor.apply(pool);
    }

    /**
     * Every read and write of each named field (pairs: the field, and the suffix of its helpers
     * {@code read<Suffix>}/{@code write<Suffix>} in {@code helpers}) goes through those helpers.
     */
    static AsmVisitorWrapper fieldsThrough(TypeDescription helpers, String... fieldAndSuffix) {
        MemberSubstitution s = MemberSubstitution.relaxed();
        for (int i = 0; i < fieldAndSuffix.length; i += 2) {
            s = s.field(named(fieldAndSuffix[i]))
                    .onRead()
                    .replaceWith(helper(helpers, "read" + fieldAndSuffix[i + 1]))
                    .field(named(fieldAndSuffix[i]))
                    .onWrite()
                    .replaceWith(helper(helpers, "write" + fieldAndSuffix[i + 1]));
        }
        return s.on(ElementMatchers.any());
    }

    /** The one method of {@code helpers} named {@code name}. */
    static MethodDescription helper(TypeDescription helpers, String name) {
        return helpers.getDeclaredMethods().filter(named(name)).getOnly();
    }

    /** The type {@code pool} describes by {@code name}, or null if it has none. */
    static TypeDescription describe(TypePool pool, String name) {
        try {
            TypePool.Resolution r = pool.describe(name);
            return r.isResolved() ? r.resolve() : null;
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** The field {@code name} of {@code type} or of a superclass, or null. */
    static FieldDescription findField(TypeDescription type, String name) {
        for (TypeDescription t = type; t != null; ) {
            var found = t.getDeclaredFields().filter(named(name));
            if (!found.isEmpty()) {
                return found.getOnly();
            }
            TypeDescription.Generic sup = t.getSuperClass();
            t = sup == null ? null : sup.asErasure();
        }
        return null;
    }

    /** "class X not found" for each of {@code types} the pool does not describe. */
    static List<String> missing(TypePool pool, List<String> types) {
        return types.stream()
                .filter(t -> describe(pool, t) == null)
                .map(t -> "class " + t + " not found")
                .collect(java.util.stream.Collectors.toList());
    }
}
