package io.streamshard.bench;

import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The slow service of the benchmark's {@code http:<µs>} work: answers {@code GET /?us=N} with 200
 * after N microseconds, on 127.0.0.1, from 512 threads (more than any scenario's workers).
 * Run in a JVM of its own, with no agent, so its CPU is not the app's.
 *
 * <p>Usage: SlowService &lt;port&gt;
 */
public final class SlowService {
    private SlowService() {}

    public static void main(String[] args) throws Exception {
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", Integer.parseInt(args[0])), 1024);
        server.setExecutor(Executors.newFixedThreadPool(512));
        server.createContext("/", ex -> {
            String q = ex.getRequestURI().getQuery();
            long us = q != null && q.startsWith("us=") ? Long.parseLong(q.substring(3)) : 0;
            long end = System.nanoTime() + TimeUnit.MICROSECONDS.toNanos(us);
            for (long left = end - System.nanoTime(); left > 0; left = end - System.nanoTime()) {
                LockSupport.parkNanos(left);
            }
            ex.sendResponseHeaders(200, -1);
            ex.close();
        });
        server.start();
        System.out.println("slow service on 127.0.0.1:" + server.getAddress().getPort());
    }
}
