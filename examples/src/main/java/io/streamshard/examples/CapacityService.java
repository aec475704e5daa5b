package io.streamshard.examples;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * A downstream with a capacity, for tests and the benchmark of {@code streamshard.workers=auto}:
 * an HTTP service on loopback that works on {@code capacity} calls at once, each for a fixed
 * latency, and either queues the calls past its capacity (they wait their turn, as in a server's
 * accept queue or thread pool) or answers them at once with 429 Too Many Requests. It counts
 * calls, rejections and the time calls waited in its queue (a histogram of 1 ms buckets), and
 * its capacity can change while it runs.
 */
public final class CapacityService implements AutoCloseable {
    private static final int BUCKETS = 10_000;

    static {
        // The JDK's server writes a response's headers and body apart; with Nagle's algorithm the
        // body then waits for the client's delayed ACK of the headers (40 ms on Linux), which
        // would add itself to every call's latency. Read when the server's configuration loads.
        System.setProperty("sun.net.httpserver.nodelay", "true");
    }

    private final HttpServer server;
    private final ExecutorService threads;
    private final long latencyMicros;
    private final boolean rejects;
    private final Slots slots;
    private volatile int capacity;
    private final AtomicLong served = new AtomicLong();
    private final AtomicLong rejected = new AtomicLong();
    /** Queue waits of served calls, by whole milliseconds (the last bucket: that or more). */
    private final AtomicLongArray waits = new AtomicLongArray(BUCKETS);
    /** Calls waiting for a slot when a served call arrived, by count (the queue it found). */
    private final AtomicLongArray depths = new AtomicLongArray(BUCKETS);

    private final java.util.concurrent.atomic.AtomicInteger queued = new java.util.concurrent.atomic.AtomicInteger();

    /**
     * @param capacity calls worked on at once
     * @param latencyMicros each call's time once worked on
     * @param rejects past the capacity: true answers 429 at once, false queues
     */
    public CapacityService(int capacity, long latencyMicros, boolean rejects) throws IOException {
        this(capacity, latencyMicros, rejects, 0);
    }

    /** As above, on {@code port} (0: a free one). */
    public CapacityService(int capacity, long latencyMicros, boolean rejects, int port) throws IOException {
        this.capacity = capacity;
        this.latencyMicros = latencyMicros;
        this.rejects = rejects;
        this.slots = new Slots(capacity);
        this.threads = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "capacity-service");
            t.setDaemon(true);
            return t;
        });
        this.server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 4096);
        server.createContext("/", this::handle);
        server.createContext("/stats", ex -> reply(ex, 200, stats()));
        server.createContext("/reset", ex -> {
            resetWaits();
            reply(ex, 200, "{}");
        });
        server.setExecutor(threads);
        server.start();
    }

    /** The address to call, {@code http://127.0.0.1:PORT/}. */
    public String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort() + "/";
    }

    private void handle(HttpExchange ex) throws IOException {
        try (ex) {
            long arrived = System.nanoTime();
            int status;
            int ahead = queued.getAndIncrement();
            boolean got = rejects ? slots.tryAcquire() : acquire();
            queued.decrementAndGet();
            if (got) {
                depths.incrementAndGet(Math.min(BUCKETS - 1, ahead));
                long waited = System.nanoTime() - arrived;
                try {
                    TimeUnit.MICROSECONDS.sleep(latencyMicros);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } finally {
                    slots.release();
                }
                waits.incrementAndGet((int) Math.min(BUCKETS - 1, TimeUnit.NANOSECONDS.toMillis(waited)));
                served.incrementAndGet();
                status = 200;
            } else {
                rejected.incrementAndGet();
                status = 429;
            }
            reply(ex, status, status == 200 ? "ok" : "busy");
        }
    }

    private static void reply(HttpExchange ex, int status, String text) throws IOException {
        byte[] body = text.getBytes(StandardCharsets.UTF_8);
        ex.sendResponseHeaders(status, body.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(body);
        }
    }

    /** What {@code GET /stats} answers: served and rejected calls, and the queue waits' p50 and p99, ms. */
    public String stats() {
        return String.format(
                "{\"capacity\": %d, \"served\": %d, \"rejected\": %d, \"wait_p50_ms\": %d, \"wait_p99_ms\": %d}",
                capacity, served.get(), rejected.get(), waitQuantileMs(0.5), waitQuantileMs(0.99));
    }

    /**
     * {@code CapacityService <port> <capacity> <latency µs> [queue|reject]}: serves on 127.0.0.1 until
     * killed; {@code GET /stats} and {@code GET /reset} (the queue waits) beside the calls.
     */
    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        CapacityService s = new CapacityService(
                Integer.parseInt(args[1]), Long.parseLong(args[2]), args.length > 3 && args[3].equals("reject"), port);
        System.out.println("capacity service on " + s.url() + ": " + s);
        Thread.currentThread().join();
    }

    /** Fair: queued calls are served in their order of arrival. */
    private static final class Slots extends Semaphore {
        Slots(int n) {
            super(n, true);
        }

        void reduce(int n) {
            reducePermits(n);
        }
    }

    private boolean acquire() {
        slots.acquireUninterruptibly();
        return true;
    }

    /** Changes the calls worked on at once (those over a lower capacity finish first). */
    public synchronized void capacity(int n) {
        int was = capacity;
        capacity = n;
        if (n > was) {
            slots.release(n - was);
        } else {
            slots.reduce(was - n);
        }
    }

    public int capacity() {
        return capacity;
    }

    public long served() {
        return served.get();
    }

    public long rejected() {
        return rejected.get();
    }

    /** The {@code q}-quantile (0..1) of the queue waits of calls served since the last reset, ms. */
    public long waitQuantileMs(double q) {
        return quantile(waits, q);
    }

    /**
     * The {@code q}-quantile of the queue each served call found on arrival (calls ahead of it
     * waiting for a slot, not counting those being worked on) since the last reset. Unlike the
     * wait, it is not stretched by pauses of the JVM the service runs in (a test's, shared with
     * the app): {@code depth / capacity × latency} is the wait an undisturbed service gives.
     */
    public long depthQuantile(double q) {
        return quantile(depths, q);
    }

    private static long quantile(AtomicLongArray histogram, double q) {
        long[] counts = new long[BUCKETS];
        long total = 0;
        for (int i = 0; i < BUCKETS; i++) {
            counts[i] = histogram.get(i);
            total += counts[i];
        }
        long want = (long) Math.ceil(q * total);
        long seen = 0;
        for (int i = 0; i < BUCKETS; i++) {
            seen += counts[i];
            if (seen >= want && seen > 0) {
                return i;
            }
        }
        return 0;
    }

    /** Forgets the queue waits counted so far. */
    public void resetWaits() {
        for (int i = 0; i < BUCKETS; i++) {
            waits.set(i, 0);
            depths.set(i, 0);
        }
    }

    @Override
    public void close() {
        server.stop(0);
        threads.shutdownNow();
    }

    @Override
    public String toString() {
        return "capacity " + capacity + ", served " + served + ", rejected " + rejected + ", waits p50/p99 "
                + waitQuantileMs(0.5) + "/" + waitQuantileMs(0.99) + " ms, queue found p50/p99 " + depthQuantile(0.5)
                + "/" + depthQuantile(0.99);
    }
}
