package io.streamshard.scheduler;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Locale;

/**
 * Loads the scheduler's native library exactly once per class loader: extracts it from the jar
 * ({@code META-INF/native/linux-x86_64/}) into a private temporary directory and loads it from
 * there. Any failure is one {@link NativeLibraryException} naming the file and the reason.
 */
public final class NativeLibrary {
    /** Where the jar carries the library. */
    public static final String RESOURCE = "META-INF/native/linux-x86_64/libstreamshard_jni.so";

    private static volatile boolean loaded;

    private NativeLibrary() {}

    /** Loads the library if this class loader has not yet; safe to call from any thread. */
    public static void load() {
        if (loaded) {
            return;
        }
        synchronized (NativeLibrary.class) {
            if (!loaded) {
                // On the bootstrap path (see Premain) this class has no loader: the jar is the system one's.
                ClassLoader own = NativeLibrary.class.getClassLoader();
                load(RESOURCE, own != null ? own : ClassLoader.getSystemClassLoader());
                loaded = true;
            }
        }
    }

    /**
     * JDK 24+ warns when a class path module loads a native library without native access; an
     * agent cannot grant that itself. One INFO names the flag that does.
     */
    private static void adviseNativeAccess() {
        try {
            Module m = NativeLibrary.class.getModule();
            Object on = Module.class.getMethod("isNativeAccessEnabled").invoke(m);
            if (Boolean.FALSE.equals(on)) {
                io.streamshard.agent.AgentLog.info(ClassLoader.getSystemClassLoader(), "streamshard: loading the "
                        + "native scheduler; add --enable-native-access=ALL-UNNAMED to the java command to allow it "
                        + "without the JVM's warning");
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            // Before Java 22 there is no such check, and no warning.
        }
    }

    /** Extracts {@code resource} from {@code loader} and loads it. Visible for tests. */
    static Path load(String resource, ClassLoader loader) {
        String os = System.getProperty("os.name", "?");
        String arch = System.getProperty("os.arch", "?");
        if (!os.toLowerCase(Locale.ROOT).startsWith("linux")
                || !(arch.equals("amd64") || arch.equals("x86_64"))) {
            throw new NativeLibraryException(
                    "streamshard: no native library for " + os + "/" + arch
                            + "; the jar carries " + resource + " for linux-x86_64 only",
                    null);
        }
        Path file = null;
        try (InputStream in = loader.getResourceAsStream(resource)) {
            if (in == null) {
                throw new NativeLibraryException(
                        "streamshard: native library " + resource
                                + " not found on the class path (is the streamshard jar complete?)",
                        null);
            }
            Path dir = Files.createTempDirectory(
                    "streamshard-native-",
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            file = dir.resolve(Path.of(resource).getFileName());
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            file.toFile().deleteOnExit();
            dir.toFile().deleteOnExit();
            adviseNativeAccess();
            System.load(file.toAbsolutePath().toString());
            return file;
        } catch (IOException e) {
            throw new NativeLibraryException(
                    "streamshard: cannot extract native library " + resource
                            + (file == null ? "" : " to " + file) + ": " + e,
                    e);
        } catch (UnsatisfiedLinkError e) {
            throw new NativeLibraryException(
                    "streamshard: cannot load native library " + file + " (from " + resource + "): "
                            + e.getMessage(),
                    e);
        }
    }
}
