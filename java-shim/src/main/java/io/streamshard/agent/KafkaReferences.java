package io.streamshard.agent;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import net.bytebuddy.description.field.FieldDescription;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.description.type.TypeDefinition;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.Opcodes;
import net.bytebuddy.jar.asm.Type;
import net.bytebuddy.jar.asm.commons.ClassRemapper;
import net.bytebuddy.jar.asm.commons.Remapper;
import net.bytebuddy.pool.TypePool;

/**
 * Every Kafka class, method and field that streamshard's code uses, collected from the compiled
 * classes at build time (in the spirit of OpenTelemetry's "muzzle") and resolved against the Kafka
 * Streams a class loader really has before anything is installed there.
 *
 * <p>The build runs {@link #main} on the compiled classes. It writes two resources: {@link #INDEX},
 * one reference per line ({@code FROM KIND OWNER NAME DESCRIPTOR}, internal names), and
 * {@link #HELPERS}, the classes to define in the class loader of Kafka Streams. It fails the build
 * if a class of the agent's own layer ({@code io.streamshard.agent}, {@code io.streamshard.scheduler})
 * uses anything but the JDK, ByteBuddy and itself: that layer is loaded once per JVM, by the
 * system class loader, where neither Kafka Streams nor SLF4J may be.
 *
 * <p>Helpers named {@code …Compat$…} are <em>variants</em> of the family {@code …Compat}: code for
 * one range of Kafka versions, never run on another. The check needs every reference of the other
 * helpers to resolve, and for each family the first variant (in name order) whose references all
 * resolve; that variant is the one the family uses.
 */
public final class KafkaReferences {
    public static final String INDEX = "META-INF/streamshard/kafka-references";
    public static final String HELPERS = "META-INF/streamshard/helpers";
    static final String KAFKA = "org/apache/kafka/";
    /**
     * Advice ({@code org.apache.kafka.streams.processor.internals.…Advice} and its nested classes) is
     * inlined into Kafka's classes: its references count, the classes are never defined.
     */
    static final String ADVICE_PACKAGE = "org/apache/kafka/streams/processor/internals/";

    static final List<String> SHARED = List.of("io/streamshard/agent/", "io/streamshard/scheduler/");
    static final String COMPAT = "Compat$";

    /** Whether {@code name} (internal form) is advice: see {@link #ADVICE_PACKAGE}. */
    static boolean isAdvice(String name) {
        if (!name.startsWith(ADVICE_PACKAGE)) {
            return false;
        }
        String simple = name.substring(ADVICE_PACKAGE.length());
        int nested = simple.indexOf('$');
        return simple.indexOf('/') < 0 && (nested < 0 ? simple : simple.substring(0, nested)).endsWith("Advice");
    }

    public enum Kind {
        TYPE,
        METHOD,
        FIELD
    }

    /** One use of a Kafka member by one of streamshard's classes. */
    public static final class Ref implements Comparable<Ref> {
        final String from;
        final Kind kind;
        final String owner;
        final String name;
        final String desc;

        Ref(String from, Kind kind, String owner, String name, String desc) {
            this.from = from;
            this.kind = kind;
            this.owner = owner;
            this.name = name;
            this.desc = desc;
        }

        String line() {
            return from + " " + kind + " " + owner + " " + name + " " + desc;
        }

        static Ref parse(String line) {
            String[] f = line.split(" ");
            return new Ref(f[0], Kind.valueOf(f[1]), f[2], f[3], f[4]);
        }

        /** As a reader would name it: {@code StreamTask.prepareCommit(boolean)}. */
        String describe() {
            String o = owner.substring(owner.lastIndexOf('/') + 1);
            switch (kind) {
                case TYPE:
                    return "class " + owner.replace('/', '.');
                case FIELD:
                    return "field " + o + "." + name;
                default:
                    String params = Stream.of(Type.getArgumentTypes(desc))
                            .map(t ->
                                    t.getClassName().substring(t.getClassName().lastIndexOf('.') + 1))
                            .collect(Collectors.joining(", "));
                    return (name.equals("<init>") ? o + "(" : o + "." + name + "(") + params + ")";
            }
        }

        @Override
        public int compareTo(Ref o) {
            return line().compareTo(o.line());
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Ref && line().equals(((Ref) o).line());
        }

        @Override
        public int hashCode() {
            return line().hashCode();
        }
    }

    /** What {@link #check} found: the problems, and the variant each family uses. */
    public static final class Result {
        public final List<String> problems;
        public final Map<String, String> variants;

        Result(List<String> problems, Map<String, String> variants) {
            this.problems = problems;
            this.variants = variants;
        }
    }

    private KafkaReferences() {}

    // ---------------------------------------------------------------- build time

    /** Build step: {@code KafkaReferences CLASSES_DIR} writes the two resources into that directory. */
    public static void main(String[] args) throws IOException {
        Path root = Paths.get(args[0]);
        Map<String, byte[]> classes = new TreeMap<>();
        try (Stream<Path> files = Files.walk(root)) {
            for (Path p : (Iterable<Path>) files.filter(f -> f.toString().endsWith(".class"))::iterator) {
                String name = root.relativize(p).toString().replace('\\', '/');
                classes.put(name.substring(0, name.length() - ".class".length()), Files.readAllBytes(p));
            }
        }
        Set<String> ours = classes.keySet();
        Set<Ref> refs = new TreeSet<>();
        List<String> helpers = new ArrayList<>();
        List<String> violations = new ArrayList<>();
        for (Map.Entry<String, byte[]> c : classes.entrySet()) {
            String name = c.getKey();
            if (name.startsWith("io/streamshard/shaded/")) {
                continue;
            }
            Set<Ref> found = scan(name, c.getValue(), ours);
            if (SHARED.stream().anyMatch(name::startsWith)) {
                for (String used : usedTypes(c.getValue())) {
                    if (!(used.startsWith("java/") || used.startsWith("net/bytebuddy/") || shared(used))) {
                        violations.add(name + " uses " + used);
                    }
                }
                continue;
            }
            refs.addAll(found);
            if (!isAdvice(name)) {
                helpers.add(name);
            }
        }
        if (!violations.isEmpty()) {
            throw new IllegalStateException(
                    "the agent's own layer may use only the JDK, ByteBuddy and itself: " + violations);
        }
        Path out = root.resolve("META-INF/streamshard");
        Files.createDirectories(out);
        Files.write(
                out.resolve("kafka-references"),
                refs.stream().map(Ref::line).collect(Collectors.toList()),
                StandardCharsets.UTF_8);
        Files.write(out.resolve("helpers"), helpers, StandardCharsets.UTF_8);
        System.out.printf("streamshard: %d Kafka references from %d helper classes%n", refs.size(), helpers.size());
    }

    static boolean shared(String internalName) {
        return SHARED.stream().anyMatch(internalName::startsWith);
    }

    /** The Kafka members one class file uses (not those of {@code ours}, streamshard's own classes). */
    static Set<Ref> scan(String from, byte[] bytes, Set<String> ours) {
        Set<Ref> out = new TreeSet<>();
        Remapper collector = new Remapper(Opcodes.ASM9) {
            private boolean kafka(String owner) {
                return owner != null && owner.startsWith(KAFKA) && !ours.contains(owner);
            }

            @Override
            public String map(String internalName) {
                if (kafka(internalName)) {
                    out.add(new Ref(from, Kind.TYPE, internalName, "-", "-"));
                }
                return internalName;
            }

            @Override
            public String mapMethodName(String owner, String name, String descriptor) {
                if (kafka(owner)) {
                    out.add(new Ref(from, Kind.METHOD, owner, name, descriptor));
                }
                return name;
            }

            @Override
            public String mapFieldName(String owner, String name, String descriptor) {
                if (kafka(owner)) {
                    out.add(new Ref(from, Kind.FIELD, owner, name, descriptor));
                }
                return name;
            }
        };
        new ClassReader(bytes).accept(new ClassRemapper(new ClassWriter(0), collector), 0);
        return out;
    }

    /** Every type one class file names. */
    static Set<String> usedTypes(byte[] bytes) {
        Set<String> out = new TreeSet<>();
        new ClassReader(bytes)
                .accept(
                        new ClassRemapper(new ClassWriter(0), new Remapper(Opcodes.ASM9) {
                            @Override
                            public String map(String internalName) {
                                out.add(internalName);
                                return internalName;
                            }
                        }),
                        0);
        return out;
    }

    // ---------------------------------------------------------------- install time

    /** The index the build wrote, read from {@code loader} (the agent's jar). */
    static List<Ref> index(ClassLoader loader) throws IOException {
        List<Ref> refs = new ArrayList<>();
        for (String line : lines(loader, INDEX)) {
            refs.add(Ref.parse(line));
        }
        return refs;
    }

    static List<String> lines(ClassLoader loader, String resource) throws IOException {
        try (InputStream in = loader.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IOException(resource + " is missing from the streamshard jar");
            }
            try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                return r.lines().filter(l -> !l.isEmpty()).collect(Collectors.toList());
            }
        }
    }

    /**
     * Resolves every reference against the classes {@code pool} describes. A reference of a
     * variant is a problem only when no variant of its family resolves (then each variant's first
     * problem is named).
     */
    static Result check(TypePool pool, Collection<Ref> refs) {
        Map<String, TypeDescription> types = new LinkedHashMap<>();
        Set<String> problems = new TreeSet<>();
        Map<String, Map<String, List<String>>> families = new TreeMap<>();
        for (Ref r : refs) {
            String family = family(r.from);
            String problem = resolve(pool, types, r);
            if (family == null) {
                if (problem != null) {
                    problems.add(problem);
                }
            } else {
                List<String> ps = families.computeIfAbsent(family, k -> new TreeMap<>())
                        .computeIfAbsent(variant(r.from), k -> new ArrayList<>());
                if (problem != null) {
                    ps.add(problem);
                }
            }
        }
        Map<String, String> chosen = new TreeMap<>();
        for (Map.Entry<String, Map<String, List<String>>> f : families.entrySet()) {
            String pick = f.getValue().entrySet().stream()
                    .filter(v -> v.getValue().isEmpty())
                    .map(Map.Entry::getKey)
                    .findFirst()
                    .orElse(null);
            if (pick != null) {
                chosen.put(f.getKey().replace('/', '.'), pick.replace('/', '.'));
            } else {
                problems.add("no variant of " + simple(f.getKey()) + " fits ("
                        + f.getValue().entrySet().stream()
                                .map(v ->
                                        simple(v.getKey()) + ": " + v.getValue().get(0))
                                .collect(Collectors.joining(", "))
                        + ")");
            }
        }
        return new Result(new ArrayList<>(problems), chosen);
    }

    static String family(String from) {
        int i = from.indexOf(COMPAT);
        return i < 0 ? null : from.substring(0, i + COMPAT.length() - 1);
    }

    /** {@code …Compat$Upto40} of {@code …Compat$Upto40$Carrier}: a variant's nested classes are part of it. */
    static String variant(String from) {
        int i = from.indexOf(COMPAT);
        int end = from.indexOf('$', i + COMPAT.length());
        return end < 0 ? from : from.substring(0, end);
    }

    private static String simple(String internalName) {
        return internalName.substring(internalName.lastIndexOf('/') + 1);
    }

    /** Null if {@code r} resolves in {@code pool}, else what is missing. */
    static String resolve(TypePool pool, Map<String, TypeDescription> types, Ref r) {
        String owner = r.owner;
        while (owner.startsWith("[")) {
            owner = owner.substring(1);
        }
        if (owner.startsWith("L") && owner.endsWith(";")) {
            owner = owner.substring(1, owner.length() - 1);
        }
        if (!owner.startsWith(KAFKA)) {
            return null;
        }
        TypeDescription t = types.computeIfAbsent(owner, o -> {
            try {
                TypePool.Resolution res = pool.describe(o.replace('/', '.'));
                return res.isResolved() ? res.resolve() : null;
            } catch (RuntimeException e) {
                return null;
            }
        });
        if (t == null) {
            return "class " + owner.replace('/', '.') + " not found";
        }
        try {
            switch (r.kind) {
                case METHOD:
                    return findMethod(t, r.name, r.desc) ? null : r.describe() + " not found";
                case FIELD:
                    return findField(t, r.name, r.desc) ? null : r.describe() + " not found";
                default:
                    return null;
            }
        } catch (RuntimeException | LinkageError e) {
            // A supertype that does not resolve: the class is incomplete on this class path.
            return r.describe() + " cannot be resolved (" + e.getMessage() + ")";
        }
    }

    private static boolean findMethod(TypeDescription type, String name, String desc) {
        List<TypeDefinition> todo = new ArrayList<>();
        todo.add(type);
        Set<String> seen = new TreeSet<>();
        while (!todo.isEmpty()) {
            TypeDefinition t = todo.remove(todo.size() - 1);
            if (!seen.add(t.getTypeName())) {
                continue;
            }
            for (MethodDescription.InDefinedShape m : t.asErasure().getDeclaredMethods()) {
                String n = m.isConstructor() ? "<init>" : m.isTypeInitializer() ? "<clinit>" : m.getInternalName();
                if (n.equals(name) && m.getDescriptor().equals(desc)) {
                    return true;
                }
            }
            if (name.equals("<init>")) {
                return false; // constructors are not inherited
            }
            if (t.getSuperClass() != null) {
                todo.add(t.getSuperClass());
            }
            todo.addAll(t.getInterfaces());
        }
        // Methods of Object through an interface type (toString, hashCode…).
        return Objects.equals(name, "toString")
                || Objects.equals(name, "hashCode")
                || Objects.equals(name, "equals")
                || Objects.equals(name, "getClass");
    }

    private static boolean findField(TypeDescription type, String name, String desc) {
        List<TypeDefinition> todo = new ArrayList<>();
        todo.add(type);
        while (!todo.isEmpty()) {
            TypeDefinition t = todo.remove(todo.size() - 1);
            for (FieldDescription.InDefinedShape f : t.asErasure().getDeclaredFields()) {
                if (f.getInternalName().equals(name) && f.getDescriptor().equals(desc)) {
                    return true;
                }
            }
            if (t.getSuperClass() != null) {
                todo.add(t.getSuperClass());
            }
            todo.addAll(t.getInterfaces());
        }
        return false;
    }

    /** Class-file major version of {@code bytes} (55 = Java 11). */
    static int majorVersion(byte[] bytes) {
        return ((bytes[6] & 0xff) << 8) | (bytes[7] & 0xff);
    }
}
