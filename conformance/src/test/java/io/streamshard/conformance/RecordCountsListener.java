package io.streamshard.conformance;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.support.descriptor.ClassSource;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;

/**
 * Writes, for every test Kafka's suite runs, how many records streamshard ran on its workers, in
 * a serial region and inline on a StreamThread while that test ran: the agent's own totals
 * ({@code io.streamshard.scheduler.RecordTotals}, in the agent's bootstrap layer) read before and
 * after the test. One tab-separated row per test to the file in {@code conformance.counts}:
 * class, test (the method; for a parameterized test also its invocation number and display name),
 * result, on workers, serial, inline, and the failure or skip reason; a class that fails before its
 * tests start (static set-up, {@code @BeforeAll}) gets one row, test "(class)". Without the agent the counts are "-". Registered through ServiceLoader, so Kafka's test
 * classes run unchanged.
 */
public final class RecordCountsListener implements TestExecutionListener {
    /** A parameterized or repeated test's invocation number in its unique id. */
    private static final Pattern INVOCATION = Pattern.compile("\\[test-template-invocation:#(\\d+)\\]");

    private static final Pattern IDENTITY = Pattern.compile("@[0-9a-f]{5,8}\\b");
    private final Method snapshot = totals();
    private final Map<String, long[]> started = new ConcurrentHashMap<>();

    private static Method totals() {
        try {
            return Class.forName("io.streamshard.scheduler.RecordTotals", true, null)
                    .getMethod("snapshot");
        } catch (ReflectiveOperationException | LinkageError e) {
            return null; // no agent: a stock run
        }
    }

    private long[] read() {
        if (snapshot == null) {
            return null;
        }
        try {
            return (long[]) snapshot.invoke(null);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void executionStarted(TestIdentifier test) {
        if (test.isTest()) {
            long[] now = read();
            if (now != null) {
                started.put(test.getUniqueId(), now);
            }
        }
    }

    @Override
    public void executionSkipped(TestIdentifier test, String reason) {
        if (test.isTest()) {
            write(test, "SKIPPED", null, null, reason);
        }
    }

    @Override
    public void executionFinished(TestIdentifier test, TestExecutionResult result) {
        if (!test.isTest()
                && result.getStatus() != TestExecutionResult.Status.SUCCESSFUL
                && test.getSource().orElse(null) instanceof ClassSource) {
            // The class itself failed (its static set-up, a @BeforeAll): its tests never started.
            write(
                    test,
                    result.getStatus().name(),
                    null,
                    null,
                    result.getThrowable().map(String::valueOf).orElse(""));
        }
        if (test.isTest()) {
            write(
                    test,
                    result.getStatus().name(),
                    started.remove(test.getUniqueId()),
                    read(),
                    result.getThrowable().map(String::valueOf).orElse(""));
        }
    }

    private static void write(TestIdentifier test, String result, long[] before, long[] after, String why) {
        String file = System.getProperty("conformance.counts");
        if (file == null || file.isEmpty()) {
            return;
        }
        String cls = "?";
        String method = test.getDisplayName();
        if (test.getSource().orElse(null) instanceof MethodSource) {
            MethodSource m = (MethodSource) test.getSource().get();
            cls = m.getClassName().substring(m.getClassName().lastIndexOf('.') + 1);
            method = m.getMethodName();
            Matcher invocation = INVOCATION.matcher(test.getUniqueId());
            if (invocation.find()) {
                method += "[" + invocation.group(1) + "] " + test.getDisplayName();
            }
        } else if (test.getSource().orElse(null) instanceof ClassSource) {
            String name = ((ClassSource) test.getSource().get()).getClassName();
            cls = name.substring(name.lastIndexOf('.') + 1);
            method = "(class)";
        }
        // An object's identity hash in a display name (Topology@62c5bbdc) differs from run to run.
        method = IDENTITY.matcher(method).replaceAll("@");
        StringBuilder row = new StringBuilder()
                .append(cls)
                .append('\t')
                .append(clean(method))
                .append('\t')
                .append(result);
        for (int i = 0; i < 3; i++) {
            row.append('\t').append(before == null || after == null ? "-" : Long.toString(after[i] - before[i]));
        }
        row.append('\t')
                .append(clean(why.length() > 400 ? why.substring(0, 400) + "..." : why))
                .append('\n');
        try {
            Files.write(
                    Path.of(file),
                    row.toString().getBytes(StandardCharsets.UTF_8),
                    StandardOpenOption.CREATE,
                    StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String clean(String s) {
        return s.replace('\t', ' ').replace('\n', ' ');
    }
}
