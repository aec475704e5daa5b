package io.streamshard.runtime;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The calling thread's total time runnable but waiting for a CPU, from Linux's
 * {@code /proc/thread-self/schedstat} (its second number, ns). Read once per block of inline
 * records, never per record. -1 where the file is missing or unreadable (not Linux, or a kernel
 * without schedstats); the inline policy then uses plain run times.
 */
final class RunQueueWait {
    private static final Path FILE = Path.of("/proc/thread-self/schedstat");
    private static volatile boolean unavailable = !Files.isReadable(FILE);

    private RunQueueWait() {}

    static long current() {
        if (unavailable) {
            return -1;
        }
        try {
            String s = new String(Files.readAllBytes(FILE), java.nio.charset.StandardCharsets.US_ASCII);
            int a = s.indexOf(' ');
            int b = s.indexOf(' ', a + 1);
            return Long.parseLong(s.substring(a + 1, b < 0 ? s.length() : b).trim());
        } catch (IOException | RuntimeException e) {
            unavailable = true;
            return -1;
        }
    }
}
