package io.streamshard.agent;

import java.io.IOException;
import java.io.InputStream;
import java.lang.instrument.Instrumentation;
import java.lang.reflect.Method;
import java.security.ProtectionDomain;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import net.bytebuddy.jar.asm.ClassReader;

/**
 * Defines streamshard's helper classes in the class loader that defines Kafka Streams when that is
 * not the agent's own loader (Spring Boot's nested-jar loader, an application server's): the
 * helpers in Kafka's packages use package-private members, which only a class of the same loader
 * may. Supertypes are defined before their subtypes, so that no helper is ever loaded from the
 * agent's loader by delegation.
 *
 * <p>No {@code sun.misc.Unsafe}: {@code java.lang} is opened to the agent's module through the
 * {@link Instrumentation} (the supported way for an agent), then {@code ClassLoader.defineClass}
 * is called reflectively.
 */
final class HelperInjector {
    private static Method define;
    private static Method findLoaded;

    private HelperInjector() {}

    /** Defines {@code helpers} (internal names, read from {@code source}) in {@code target}. */
    static synchronized void inject(Instrumentation inst, ClassLoader target, ClassLoader source, List<String> helpers)
            throws IOException, ReflectiveOperationException {
        open(inst);
        Set<String> all = new HashSet<>(helpers);
        Set<String> done = new HashSet<>();
        ProtectionDomain pd = HelperInjector.class.getProtectionDomain();
        for (String h : helpers) {
            define(h, all, done, target, source, pd);
        }
    }

    private static void define(
            String name, Set<String> all, Set<String> done, ClassLoader target, ClassLoader source, ProtectionDomain pd)
            throws IOException, ReflectiveOperationException {
        if (!done.add(name)) {
            return;
        }
        byte[] bytes = read(source, name + ".class");
        ClassReader r = new ClassReader(bytes);
        if (all.contains(r.getSuperName())) {
            define(r.getSuperName(), all, done, target, source, pd);
        }
        for (String i : r.getInterfaces()) {
            if (all.contains(i)) {
                define(i, all, done, target, source, pd);
            }
        }
        String binary = name.replace('/', '.');
        if (findLoaded.invoke(target, binary) != null) {
            return; // an earlier install into this loader (a retransformation)
        }
        define.invoke(target, binary, bytes, 0, bytes.length, pd);
    }

    private static byte[] read(ClassLoader source, String resource) throws IOException {
        try (InputStream in = source.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IOException(resource + " is missing from the streamshard jar");
            }
            return in.readAllBytes();
        }
    }

    private static void open(Instrumentation inst) throws ReflectiveOperationException {
        if (define != null) {
            return;
        }
        Module base = Object.class.getModule();
        Module ours = HelperInjector.class.getModule();
        if (!base.isOpen("java.lang", ours)) {
            inst.redefineModule(
                    base,
                    Collections.emptySet(),
                    Collections.emptyMap(),
                    Map.of("java.lang", Set.of(ours)),
                    Collections.emptySet(),
                    Collections.emptyMap());
        }
        Method d = ClassLoader.class.getDeclaredMethod(
                "defineClass", String.class, byte[].class, int.class, int.class, ProtectionDomain.class);
        d.setAccessible(true);
        Method f = ClassLoader.class.getDeclaredMethod("findLoadedClass", String.class);
        f.setAccessible(true);
        findLoaded = f;
        define = d;
    }
}
