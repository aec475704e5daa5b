package io.streamshard.examples;

import java.io.File;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.util.Properties;

/**
 * Two applications in one JVM, each with its own class loader over the same Kafka Streams jars
 * (as an application server loads two deployments): each builds a topology and a KafkaStreams
 * through reflection and asks its own {@code StreamShard} whether streamshard runs it. Its own
 * class path has no Kafka. Args: the jars, separated by the path separator.
 */
public final class TwoLoadersMain {
    private TwoLoadersMain() {}

    public static void main(String[] args) throws Exception {
        String[] jars = args[0].split(File.pathSeparator);
        URL[] urls = new URL[jars.length];
        for (int i = 0; i < jars.length; i++) {
            urls[i] = new File(jars[i]).toURI().toURL();
        }
        Object[] streams = new Object[2];
        URLClassLoader[] loaders = new URLClassLoader[2];
        for (int n = 0; n < 2; n++) {
            loaders[n] = new URLClassLoader(urls, ClassLoader.getPlatformClassLoader());
            // As an application server does: Kafka's configs load classes through the context loader.
            Thread.currentThread().setContextClassLoader(loaders[n]);
            streams[n] = create(loaders[n], "two-loaders-" + n);
        }
        for (int n = 0; n < 2; n++) {
            Class<?> api = Class.forName("io.streamshard.StreamShard", true, loaders[n]);
            Class<?> ks = Class.forName("org.apache.kafka.streams.KafkaStreams", false, loaders[n]);
            boolean active = (Boolean) api.getMethod("active", ks).invoke(null, streams[n]);
            Class<?> scheduler = Class.forName("io.streamshard.scheduler.NativeScheduler", false, loaders[n]);
            // The JNI class is the agent's one copy (bootstrap path), the same for both applications.
            Class<?> theOne = Class.forName(
                    "io.streamshard.scheduler.NativeScheduler", false, ClassLoader.getSystemClassLoader());
            System.out.println("app " + n + ": active=" + active + " api-in-own-loader="
                    + (api.getClassLoader() == loaders[n]) + " scheduler-shared=" + (scheduler == theOne));
        }
        for (int n = 0; n < 2; n++) {
            Thread.currentThread().setContextClassLoader(loaders[n]);
            streams[n].getClass().getMethod("close").invoke(streams[n]);
        }
        System.out.println("two loaders done");
    }

    private static Object create(ClassLoader l, String appId) throws Exception {
        Class<?> builderType = Class.forName("org.apache.kafka.streams.StreamsBuilder", true, l);
        Object builder = builderType.getConstructor().newInstance();
        Object stream = builderType.getMethod("stream", String.class).invoke(builder, appId + "-in");
        Class<?> mapperType = Class.forName("org.apache.kafka.streams.kstream.ValueMapper", true, l);
        Object mapper = Proxy.newProxyInstance(
                l, new Class<?>[] {mapperType}, (p, m, a) -> m.getName().equals("apply") ? a[0] : m.invoke(p, a));
        Object mapped = stream.getClass().getMethod("mapValues", mapperType).invoke(stream, mapper);
        Method to = mapped.getClass().getMethod("to", String.class);
        to.setAccessible(true);
        to.invoke(mapped, appId + "-out");
        Object topology = builderType.getMethod("build").invoke(builder);
        Properties p = new Properties();
        p.put("application.id", appId);
        p.put("bootstrap.servers", "127.0.0.1:1"); // never started: no broker needed
        p.put("streamshard.workers", "2");
        p.put("state.dir", Files.createTempDirectory("two-loaders").toString());
        Class<?> topologyType = Class.forName("org.apache.kafka.streams.Topology", true, l);
        return Class.forName("org.apache.kafka.streams.KafkaStreams", true, l)
                .getConstructor(topologyType, Properties.class)
                .newInstance(topology, p);
    }
}
