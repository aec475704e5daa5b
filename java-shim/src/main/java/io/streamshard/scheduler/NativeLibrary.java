package io.streamshard.scheduler;

import io.streamshard.agent.AgentLog;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Locale;

/**
 * Loads the scheduler's native library exactly once per class loader: picks the build for this
 * platform ({@code META-INF/native/<platform>/}, see {@link #PLATFORMS}), extracts it into a
 * private temporary directory and loads it from there. Any failure is one
 * {@link NativeLibraryException} naming the platform, the file and the reason.
 */
public final class NativeLibrary {
    /** Where the jar carries the libraries: {@code META-INF/native/<platform>/<file>}. */
    public static final String DIRECTORY = "META-INF/native/";

    /**
     * Every platform the jar carries a library for. The glibc builds need glibc 2.17 or later
     * (RHEL/CentOS 7 and everything since); the musl ones are for Alpine and other musl systems.
     */
    public static final List<String> PLATFORMS = List.of(
            "linux-x86_64",
            "linux-aarch64",
            "linux-x86_64-musl",
            "linux-aarch64-musl",
            "macos-aarch64",
            "macos-x86_64");

    private static volatile boolean loaded;

    private NativeLibrary() {}

    /** Loads the library if this class loader has not yet; safe to call from any thread. */
    public static void load() {
        if (loaded) {
            return;
        }
        synchronized (NativeLibrary.class) {
            if (!loaded) {
                load(resource(), jarLoader());
                loaded = true;
            }
        }
    }

    /**
     * Whether the jar carries a library for this platform, without loading it (the agent asks at
     * start, so that a platform it cannot serve is one line and nothing instrumented); throws a
     * {@link NativeLibraryException} naming the platform or the missing file if not.
     */
    public static void check() {
        String resource = resource();
        if (jarLoader().getResource(resource) == null) {
            throw notFound(resource);
        }
    }

    /** The loader that sees the jar: on the bootstrap path (see Premain) this class has none, and the jar is the system one's. */
    private static ClassLoader jarLoader() {
        ClassLoader own = NativeLibrary.class.getClassLoader();
        return own != null ? own : ClassLoader.getSystemClassLoader();
    }

    private static NativeLibraryException notFound(String resource) {
        return new NativeLibraryException(
                "streamshard: native library " + resource
                        + " not found on the class path (is the streamshard jar complete?)",
                null);
    }

    /** The library for this JVM's platform, or a {@link NativeLibraryException} naming what it is. */
    public static String resource() {
        String os = System.getProperty("os.name", "?");
        String arch = System.getProperty("os.arch", "?");
        String platform = platform(os, arch, os.toLowerCase(Locale.ROOT).startsWith("linux") && musl());
        if (platform == null) {
            throw new NativeLibraryException(
                    "streamshard: no native library for " + os + "/" + arch + "; the jar carries "
                            + String.join(", ", PLATFORMS),
                    null);
        }
        return DIRECTORY + platform + "/" + fileName(platform);
    }

    /**
     * The platform directory for {@code os.name}, {@code os.arch} and C library, or null if the
     * jar has no library for it.
     */
    static String platform(String osName, String osArch, boolean musl) {
        String os = osName.toLowerCase(Locale.ROOT);
        String arch;
        switch (osArch.toLowerCase(Locale.ROOT)) {
            case "amd64":
            case "x86_64":
                arch = "x86_64";
                break;
            case "aarch64":
            case "arm64":
                arch = "aarch64";
                break;
            default:
                return null;
        }
        if (os.startsWith("linux")) {
            return "linux-" + arch + (musl ? "-musl" : "");
        }
        if (os.startsWith("mac") || os.startsWith("darwin")) {
            return "macos-" + arch;
        }
        return null;
    }

    static String fileName(String platform) {
        return platform.startsWith("macos-") ? "libstreamshard_jni.dylib" : "libstreamshard_jni.so";
    }

    /**
     * Whether this process runs on musl rather than glibc: the C library the JVM itself was linked
     * against, as mapped into this process (a musl loader installed beside glibc, as Debian's
     * {@code musl} package does, does not count).
     */
    static boolean musl() {
        try {
            return musl(new String(Files.readAllBytes(Path.of("/proc/self/maps")), StandardCharsets.UTF_8));
        } catch (IOException | RuntimeException e) {
            return false; // no /proc: assume glibc, by far the common case; a wrong guess fails to load, loudly
        }
    }

    /** Whether {@code maps} (the text of {@code /proc/self/maps}) shows musl's C library mapped. */
    static boolean musl(String maps) {
        for (String line : maps.split("\n")) {
            int slash = line.lastIndexOf('/');
            String file = slash < 0 ? "" : line.substring(slash + 1);
            if (file.startsWith("ld-musl-") || file.startsWith("libc.musl-")) {
                return true;
            }
        }
        return false;
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
                AgentLog.info(
                        ClassLoader.getSystemClassLoader(),
                        "streamshard: loading the "
                                + "native scheduler; add --enable-native-access=ALL-UNNAMED to the java command to allow it "
                                + "without the JVM's warning");
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            // Before Java 22 there is no such check, and no warning.
        }
    }

    /** Extracts {@code resource} from {@code loader} and loads it. Visible for tests. */
    static Path load(String resource, ClassLoader loader) {
        Path file = null;
        try (InputStream in = loader.getResourceAsStream(resource)) {
            if (in == null) {
                throw notFound(resource);
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
                    "streamshard: cannot extract native library " + resource + (file == null ? "" : " to " + file)
                            + ": " + e,
                    e);
        } catch (UnsatisfiedLinkError e) {
            throw new NativeLibraryException(
                    "streamshard: cannot load native library " + file + " (from " + resource + "): " + e.getMessage(),
                    e);
        }
    }
}
