package io.streamshard.agent;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.instrument.Instrumentation;
import java.lang.reflect.InvocationTargetException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.util.Enumeration;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.JarOutputStream;
import java.util.zip.ZipEntry;

/**
 * The jar's {@code Premain-Class} and {@code Agent-Class}. Compiled for Java 8 and using nothing
 * but the JDK, so that it loads on any JVM: on one older than Java 11 it says so in one line and
 * installs nothing; on any other it starts the agent, and whatever goes wrong there is one line
 * too. The JVM always starts, and the application then runs stock.
 *
 * <p>Before the agent starts, its own layer (the classes that use nothing but the JDK: the agent,
 * the native scheduler and the relocated ByteBuddy) is appended to the
 * bootstrap class path, so that every class loader sees the same one, including one whose parent
 * is not the system class loader; the helpers, which use Kafka, stay out of it and are defined in
 * Kafka's own loader.
 */
public final class Premain {
    static final String NEEDS = "streamshard: needs Java 11 or later; this JVM is Java ";

    private Premain() {}

    public static void premain(String args, Instrumentation inst) {
        start(args, inst);
    }

    public static void agentmain(String args, Instrumentation inst) {
        start(args, inst);
    }

    /**
     * {@code args}: the agent's argument ({@code -javaagent:streamshard.jar=inline.below.us=0,workers=16}),
     * default {@code streamshard.*} settings for every instance; checked where the settings are.
     */
    static void start(String args, Instrumentation inst) {
        try {
            String spec = System.getProperty("java.specification.version");
            if (!supported(spec)) {
                System.err.println("[streamshard] ERROR io.streamshard - " + NEEDS + spec
                        + "; nothing was changed, the application runs stock (serial)");
                return;
            }
            shareAgentLayer(inst);
            Class.forName("io.streamshard.agent.StreamShardAgent")
                    .getMethod("premain", Instrumentation.class, String.class)
                    .invoke(null, inst, args);
        } catch (Throwable t) {
            Throwable cause = t instanceof InvocationTargetException ? t.getCause() : t;
            System.err.println("[streamshard] ERROR io.streamshard - streamshard: the agent could not start (" + cause
                    + "); nothing was changed, the application runs stock (serial)");
        }
    }

    /**
     * Prefixes of the agent's own layer in the jar (see the class comment). The native libraries
     * stay out: the layer's NativeLibrary reads its platform's one from this jar, which
     * {@code -javaagent} puts on the system class path, rather than every platform's being copied
     * at each start.
     */
    static final String[] SHARED = {"io/streamshard/agent/", "io/streamshard/scheduler/", "io/streamshard/shaded/"};

    /** Copies the agent's own layer out of this jar into a private temporary jar on the bootstrap path. */
    static void shareAgentLayer(Instrumentation inst) throws IOException {
        File self;
        try {
            self = new File(Premain.class
                    .getProtectionDomain()
                    .getCodeSource()
                    .getLocation()
                    .toURI());
        } catch (URISyntaxException | RuntimeException e) {
            throw new IOException("cannot locate the streamshard jar: " + e, e);
        }
        if (!self.isFile()) {
            return; // not run from a jar (a build's classes directory): one class loader holds it all
        }
        File dir = Files.createTempDirectory("streamshard-agent-").toFile();
        dir.deleteOnExit();
        File shared = new File(dir, "streamshard-agent-layer.jar");
        shared.deleteOnExit();
        byte[] buf = new byte[1 << 16];
        try (JarFile in = new JarFile(self);
                OutputStream file = new FileOutputStream(shared);
                JarOutputStream out = new JarOutputStream(file)) {
            for (Enumeration<JarEntry> e = in.entries(); e.hasMoreElements(); ) {
                JarEntry entry = e.nextElement();
                String name = entry.getName();
                if (entry.isDirectory() || !shared(name) || name.equals("io/streamshard/agent/Premain.class")) {
                    continue;
                }
                // Stored, not deflated: deflating the layer again at every start cost over a
                // second of CPU.
                JarEntry copy = new JarEntry(name);
                copy.setMethod(ZipEntry.STORED);
                copy.setSize(entry.getSize());
                copy.setCompressedSize(entry.getSize());
                copy.setCrc(entry.getCrc());
                out.putNextEntry(copy);
                try (InputStream data = in.getInputStream(entry)) {
                    for (int n; (n = data.read(buf)) > 0; ) {
                        out.write(buf, 0, n);
                    }
                }
                out.closeEntry();
            }
        }
        inst.appendToBootstrapClassLoaderSearch(new JarFile(shared));
    }

    static boolean shared(String entry) {
        for (String p : SHARED) {
            if (entry.startsWith(p)) {
                return true;
            }
        }
        return false;
    }

    /** Whether {@code spec} ({@code java.specification.version}: "1.8", "11", "25") is Java 11 or later. */
    static boolean supported(String spec) {
        if (spec == null || spec.startsWith("1.")) {
            return false;
        }
        try {
            int dot = spec.indexOf('.');
            return Integer.parseInt(dot < 0 ? spec : spec.substring(0, dot)) >= 11;
        } catch (NumberFormatException e) {
            return false;
        }
    }
}
