package io.streamshard.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.lang.reflect.Field;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import net.bytebuddy.ByteBuddy;
import net.bytebuddy.asm.AsmVisitorWrapper;
import net.bytebuddy.dynamic.ClassFileLocator;
import net.bytebuddy.dynamic.DynamicType;
import net.bytebuddy.pool.TypePool;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Applies the agent's advice to each supported version's own classes (the real jars) exactly as
 * the install would, defines the results with streamshard's helpers in a class loader that has
 * that version and nothing else, and initializes them: the JVM's bytecode verifier checks every
 * instrumented class, and every helper links against that version.
 */
class TransformVerifyTest {

    @ParameterizedTest
    @ValueSource(strings = {"3.9.2", "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0"})
    void theAdviceVerifiesOnEverySupportedVersion(String version) throws Exception {
        File streams = VersionGuardTest.jar("kafka-streams-" + version);
        File clients = VersionGuardTest.jar("kafka-clients-" + version);
        Map<String, byte[]> transformed = new HashMap<>();
        try (ClassFileLocator locator = VersionGuardTest.locator(version, version)) {
            TypePool pool = TypePool.Default.of(locator);
            assertThat(StreamShardAgent.verify(pool, version, VersionGuardTest.index()).problems)
                    .isEmpty();
            for (Map.Entry<String, List<AsmVisitorWrapper>> e :
                    Hooks.visitors(pool, locator).entrySet()) {
                DynamicType.Builder<?> b =
                        new ByteBuddy().decorate(pool.describe(e.getKey()).resolve(), locator);
                for (AsmVisitorWrapper v : e.getValue()) {
                    b = b.visit(v);
                }
                transformed.put(e.getKey(), b.make().getBytes());
            }
        }
        assertThat(transformed)
                .containsKeys(
                        "org.apache.kafka.streams.processor.internals.StreamTask",
                        "org.apache.kafka.streams.KafkaStreams");
        List<URL> urls = new ArrayList<>(List.of(
                streams.toURI().toURL(),
                clients.toURI().toURL(),
                VersionGuardTest.jar("slf4j-api").toURI().toURL(),
                VersionGuardTest.ourClasses().toUri().toURL(),
                ByteBuddy.class.getProtectionDomain().getCodeSource().getLocation()));
        try (Isolated loader = new Isolated(urls.toArray(new URL[0]), transformed)) {
            for (String name : transformed.keySet()) {
                Class<?> c = Class.forName(name, true, loader);
                assertThat(c.getClassLoader()).as(name).isSameAs(loader);
            }
            for (String h : KafkaReferences.lines(StreamShardAgent.class.getClassLoader(), KafkaReferences.HELPERS)) {
                Class<?> c = Class.forName(h.replace('/', '.'), true, loader);
                assertThat(c.getClassLoader()).as(h).isSameAs(loader);
            }
            Class<?> compat =
                    Class.forName("org.apache.kafka.streams.processor.internals.StreamShardCompat", true, loader);
            Field f = compat.getDeclaredField("COMPAT");
            f.setAccessible(true);
            assertThat(f.get(null).getClass().getName())
                    .isEqualTo(
                            version.startsWith("3.") || version.startsWith("4.0")
                                    ? VersionGuardTest.UPTO_40
                                    : VersionGuardTest.SINCE_41);
        }
    }

    /** Child-first over its own URLs (the JDK aside), with the transformed classes in place of the jar's. */
    static final class Isolated extends URLClassLoader {
        private final Map<String, byte[]> transformed;

        Isolated(URL[] urls, Map<String, byte[]> transformed) {
            super(urls, ClassLoader.getPlatformClassLoader());
            this.transformed = transformed;
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c == null) {
                    byte[] b = transformed.get(name);
                    if (b != null) {
                        c = defineClass(name, b, 0, b.length);
                    } else {
                        try {
                            c = findClass(name);
                        } catch (ClassNotFoundException e) {
                            c = getParent().loadClass(name);
                        }
                    }
                }
                if (resolve) {
                    resolveClass(c);
                }
                return c;
            }
        }
    }
}
