/**
 * Benchmark driver for Apache Curator 5.x (InterProcessMutex and
 * InterProcessReadWriteLock), for zklock's `make bench`. Compiled with javac
 * against the Debian jars (libcurator-recipes-java) into target/bench/java.
 *
 * <pre>
 * java CuratorBench SCENARIO HOSTS PATH [key=value ...]
 *   uncontended  iters warmup hold_us              one session, acquire+release cycles
 *   contended    sessions duration_ms warmup_ms    one InterProcessMutex per session, one path
 *   queue        sessions waiters duration_ms ...  waiters spread over sessions (round robin)
 *   independent  sessions duration_ms warmup_ms    each session its own path
 *   rw           readers writers hold_us ...       InterProcessReadWriteLock, one session each
 *   herd         sessions waiters                  a holder and queued waiters; stdin-driven
 *   drain        sessions waiters                  waiters queued behind a holder acquire once each
 *   memory-one / memory-many / memory-hold   n      zklock-bench memory's protocol (bench/src/memory.rs)
 * </pre>
 * Prints one JSON line {"result": {...}} on stdout (the same format as every
 * driver of bench/); herd also prints {"event": ...} lines.
 */
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorBench {
    private CuratorBench() {}

    private static Map<String, String> params = new HashMap<>();

    private static long num(String k, long d) {
        String v = params.get(k);
        return v == null ? d : Long.parseLong(v);
    }

    private static CuratorFramework connect(String hosts) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.builder()
            .connectString(hosts)
            .sessionTimeoutMs(10_000)
            .connectionTimeoutMs(15_000)
            .retryPolicy(new ExponentialBackoffRetry(100, 3))
            .build();
        c.start();
        if (!c.blockUntilConnected(15, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no connection to " + hosts);
        }
        return c;
    }

    private static void acquire(InterProcessLock l) throws Exception {
        if (!l.acquire(120, TimeUnit.SECONDS)) {
            throw new IllegalStateException("acquire timed out");
        }
    }

    private static void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    private static String list(long[] xs) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < xs.length; i++) {
            if (i > 0) b.append(',');
            b.append(xs[i]);
        }
        return b.append(']').toString();
    }

    static String uncontended(String hosts, String path) throws Exception {
        long iters = num("iters", 1000), warmup = num("warmup", 100), holdUs = num("hold_us", 0);
        CuratorFramework c = connect(hosts);
        InterProcessMutex m = new InterProcessMutex(c, path);
        StringBuilder lat = new StringBuilder("[");
        com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        long cpu0 = 0;
        for (long i = 0; i < warmup + iters; i++) {
            if (i == warmup) {
                say("{\"event\":\"measuring\"}");
                cpu0 = os.getProcessCpuTime();
            }
            long t = System.nanoTime();
            acquire(m);
            if (holdUs > 0) TimeUnit.MICROSECONDS.sleep(holdUs);
            m.release();
            double us = (System.nanoTime() - t) / 1000.0;
            if (i >= warmup) {
                if (lat.length() > 1) lat.append(',');
                lat.append(String.format(java.util.Locale.ROOT, "%.1f", us));
            }
        }
        double cpu = (os.getProcessCpuTime() - cpu0) / 1e9;
        say("{\"event\":\"measured\"}");
        c.close();
        return "{\"cpu_s\":" + cpu + ",\"lat_us\":" + lat + "]}";
    }

    /** contended / queue / independent. */
    static String throughput(String hosts, String path, boolean independent) throws Exception {
        int sessions = (int) Math.max(1, num("sessions", 2));
        int waiters = (int) Math.max(1, num("waiters", sessions));
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < sessions; i++) clients.add(connect(hosts));
        AtomicInteger[] inside = new AtomicInteger[independent ? waiters : 1];
        for (int i = 0; i < inside.length; i++) inside[i] = new AtomicInteger();
        AtomicLong violations = new AtomicLong();
        long[] per = new long[waiters];
        CyclicBarrier barrier = new CyclicBarrier(waiters + 1);
        long[] window = new long[2];
        List<Thread> threads = new ArrayList<>();
        Throwable[] failure = new Throwable[1];
        for (int i = 0; i < waiters; i++) {
            final int id = i;
            final InterProcessMutex m = new InterProcessMutex(clients.get(i % sessions), independent ? path + "/" + i : path);
            final AtomicInteger in = inside[independent ? i : 0];
            Thread t = new Thread(null, () -> {
                try {
                    barrier.await();
                    long n = 0;
                    while (System.nanoTime() < window[1]) {
                        acquire(m);
                        if (in.incrementAndGet() != 1) violations.incrementAndGet();
                        long now = System.nanoTime();
                        if (now >= window[0] && now < window[1]) n++;
                        in.decrementAndGet();
                        m.release();
                    }
                    per[id] = n;
                } catch (Throwable e) {
                    failure[0] = e;
                }
            }, "w" + i, 256 * 1024);
            t.start();
            threads.add(t);
        }
        double w = runWorkers(threads, barrier, window, failure, clients);
        long total = 0;
        for (long n : per) total += n;
        return "{\"grants\":" + total + ",\"per_worker\":" + list(per) + ",\"violations\":" + violations.get()
            + ",\"window_s\":" + w + ",\"cpu_s\":" + windowCpu + "}";
    }

    /** The process's CPU seconds in the last window of runWorkers. */
    static double windowCpu;

    /**
     * Sets the measuring window (after the warm-up), lets the started worker
     * threads through the barrier, measures the process's CPU time in the
     * window (telling the runner when it starts and ends, into windowCpu),
     * waits for the threads, rethrows a worker's failure and closes the
     * clients. Returns the window in seconds.
     */
    static double runWorkers(List<Thread> threads, CyclicBarrier barrier, long[] window, Throwable[] failure,
                             List<CuratorFramework> clients) throws Exception {
        long start = System.nanoTime();
        window[0] = start + num("warmup_ms", 500) * 1_000_000L;
        window[1] = start + num("duration_ms", 3000) * 1_000_000L;
        barrier.await();
        com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        TimeUnit.NANOSECONDS.sleep(Math.max(0, window[0] - System.nanoTime()));
        say("{\"event\":\"measuring\"}");
        long cpu0 = os.getProcessCpuTime();
        TimeUnit.NANOSECONDS.sleep(Math.max(0, window[1] - System.nanoTime()));
        windowCpu = (os.getProcessCpuTime() - cpu0) / 1e9;
        say("{\"event\":\"measured\"}");
        for (Thread t : threads) t.join();
        if (failure[0] != null) throw new RuntimeException(failure[0]);
        for (CuratorFramework c : clients) c.close();
        return (window[1] - window[0]) / 1e9;
    }

    static String rw(String hosts, String path) throws Exception {
        int readers = (int) num("readers", 8), writers = (int) num("writers", 2);
        long holdUs = num("hold_us", 1000);
        int n = readers + writers;
        Object mx = new Object();
        int[] state = new int[2];
        AtomicLong violations = new AtomicLong();
        long[] per = new long[n];
        CyclicBarrier barrier = new CyclicBarrier(n + 1);
        long[] window = new long[2];
        List<Thread> threads = new ArrayList<>();
        List<CuratorFramework> clients = new ArrayList<>();
        Throwable[] failure = new Throwable[1];
        for (int i = 0; i < n; i++) {
            final int id = i;
            final boolean writer = i >= readers;
            CuratorFramework c = connect(hosts);
            clients.add(c);
            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(c, path);
            final InterProcessLock l = writer ? rw.writeLock() : rw.readLock();
            Thread t = new Thread(() -> {
                try {
                    barrier.await();
                    long k = 0;
                    while (System.nanoTime() < window[1]) {
                        acquire(l);
                        synchronized (mx) {
                            state[writer ? 1 : 0]++;
                            if (state[1] > 1 || (state[1] == 1 && state[0] > 0)) violations.incrementAndGet();
                        }
                        long now = System.nanoTime();
                        if (now >= window[0] && now < window[1]) k++;
                        TimeUnit.MICROSECONDS.sleep(holdUs);
                        synchronized (mx) {
                            state[writer ? 1 : 0]--;
                        }
                        l.release();
                    }
                    per[id] = k;
                } catch (Throwable e) {
                    failure[0] = e;
                }
            });
            t.start();
            threads.add(t);
        }
        double win = runWorkers(threads, barrier, window, failure, clients);
        long r = 0, w = 0;
        for (int i = 0; i < n; i++) {
            if (i >= readers) w += per[i]; else r += per[i];
        }
        return "{\"read_grants\":" + r + ",\"write_grants\":" + w + ",\"grants\":" + (r + w) + ",\"violations\":"
            + violations.get() + ",\"window_s\":" + win + "}";
    }

    static String herd(String hosts, String path) throws Exception {
        int sessions = (int) Math.max(2, num("sessions", 8));
        int waiters = (int) num("waiters", 32);
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < sessions; i++) clients.add(connect(hosts));
        CuratorFramework observer = clients.get(0);
        BlockingQueue<CountDownLatch> granted = new LinkedBlockingQueue<>();
        for (int i = 0; i <= waiters; i++) {
            final InterProcessMutex m = new InterProcessMutex(clients.get(i % sessions), path);
            Thread t = new Thread(null, () -> {
                try {
                    acquire(m);
                    CountDownLatch release = new CountDownLatch(1);
                    granted.add(release);
                    release.await();
                    m.release();
                } catch (Throwable e) {
                    // the process ends with quit
                }
            }, "h" + i, 256 * 1024);
            t.setDaemon(true);
            t.start();
            long until = System.nanoTime() + 10_000_000_000L;
            while (true) {
                int have = observer.checkExists().forPath(path) == null ? 0 : observer.getChildren().forPath(path).size();
                if (have >= i + 1) break;
                if (System.nanoTime() > until) throw new IllegalStateException("waiter " + i + " did not queue");
                Thread.sleep(1);
            }
        }
        CountDownLatch holder = granted.poll(30, TimeUnit.SECONDS);
        say("{\"event\":\"ready\"}");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        int rounds = 0;
        String line;
        while ((line = in.readLine()) != null && line.trim().equals("release")) {
            holder.countDown();
            holder = granted.poll(30, TimeUnit.SECONDS);
            if (holder == null) throw new IllegalStateException("no grant after a release");
            rounds++;
            say("{\"event\":\"granted\"}");
        }
        return "{\"rounds\":" + rounds + "}";
    }

    /**
     * drain: waiters queue behind a holder, each acquires once; timed from the holder's release.
     * Repeated `rounds` times, the first not counted (JIT warm-up).
     */
    static String drain(String hosts, String path) throws Exception {
        int sessions = (int) Math.max(1, num("sessions", 8));
        int waiters = (int) num("waiters", 32);
        long rounds = Math.max(2, num("rounds", 3));
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < sessions; i++) clients.add(connect(hosts));
        CuratorFramework observer = clients.get(0);
        AtomicInteger inside = new AtomicInteger(), violations = new AtomicInteger(), failed = new AtomicInteger();
        double win = 0;
        for (long round = 0; round < rounds; round++) {
            InterProcessMutex holder = new InterProcessMutex(observer, path);
            acquire(holder);
            AtomicLong last = new AtomicLong();
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < waiters; i++) {
                final InterProcessMutex m = new InterProcessMutex(clients.get(i % sessions), path);
                Thread t = new Thread(null, () -> {
                    try {
                        acquire(m);
                        if (inside.incrementAndGet() != 1) violations.incrementAndGet();
                        inside.decrementAndGet();
                        m.release();
                        last.set(System.nanoTime());
                    } catch (Throwable e) {
                        failed.incrementAndGet();
                    }
                }, "d" + i, 256 * 1024);
                threads.add(t);
                t.start();
            }
            long until = System.nanoTime() + 120_000_000_000L;
            while (observer.getChildren().forPath(path).size() < waiters + 1) {
                if (System.nanoTime() > until) throw new IllegalStateException("the waiters did not all queue");
                Thread.sleep(5);
            }
            long start = System.nanoTime();
            holder.release();
            for (Thread t : threads) t.join();
            if (failed.get() > 0) throw new IllegalStateException(failed.get() + " waiters failed");
            if (round > 0) win += (last.get() - start) / 1e9;
        }
        for (CuratorFramework c : clients) c.close();
        return "{\"grants\":" + (waiters * (rounds - 1)) + ",\"window_s\":" + win + ",\"violations\":"
            + violations.get() + "}";
    }

    /** A number field (kB) of /proc/self/status, in bytes; Threads as is. */
    private static long status(String text, String key) {
        for (String line : text.split("\n")) {
            if (line.startsWith(key + ":")) {
                String v = line.substring(key.length() + 1).trim().split("\\s+")[0];
                return Long.parseLong(v) * (key.equals("Threads") ? 1 : 1024);
            }
        }
        return -1;
    }

    /**
     * One look at this process for zklock-bench memory: VmRSS, VmHWM (bytes)
     * and Threads from /proc/self/status; heap: null (no mallinfo from Java);
     * gc_heap: the Java heap in use (total - free).
     */
    private static String memSnapshot(String name) throws Exception {
        String st = new String(java.nio.file.Files.readAllBytes(java.nio.file.Paths.get("/proc/self/status")),
            StandardCharsets.UTF_8);
        Runtime rt = Runtime.getRuntime();
        return "{\"snap\":\"" + name + "\",\"rss\":" + status(st, "VmRSS") + ",\"hwm\":" + status(st, "VmHWM")
            + ",\"threads\":" + status(st, "Threads") + ",\"heap\":null,\"gc_heap\":"
            + (rt.totalMemory() - rt.freeMemory()) + "}";
    }

    /**
     * zklock-bench memory (bench/src/memory.rs): one session; a holder (one)
     * or n holders (many) taken first; on "start" n acquires, each its own
     * InterProcessMutex on a thread of its own (acquire blocks), or, in
     * hold, taken one after another on one thread (then "granted"). On
     * "snap gc" System.gc() runs first. Nothing is released.
     */
    private static String memory(String hosts, String path, String shape) throws Exception {
        final int n = (int) num("n", 1000);
        CuratorFramework c = connect(hosts);
        final List<InterProcessMutex> holders = new ArrayList<>();
        if (shape.equals("one")) holders.add(new InterProcessMutex(c, path));
        if (shape.equals("many")) for (int i = 0; i < n; i++) holders.add(new InterProcessMutex(c, path + "/" + i));
        for (InterProcessMutex h : holders) h.acquire();
        final List<InterProcessMutex> locks = new ArrayList<>();
        for (int i = 0; i < n; i++) locks.add(new InterProcessMutex(c, shape.equals("one") ? path : path + "/" + i));
        System.gc();
        Thread.sleep(200);
        say("{\"event\":\"ready\"}");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split("\\s+");
            if (w[0].equals("start")) {
                java.nio.file.Files.write(java.nio.file.Paths.get("/proc/self/clear_refs"), "5".getBytes());
                say(memSnapshot("before"));
                if (shape.equals("hold")) {
                    Thread t = new Thread(() -> {
                        try {
                            for (InterProcessMutex m : locks) m.acquire();
                            say("{\"event\":\"granted\"}");
                        } catch (Exception e) {
                            e.printStackTrace();
                        }
                    });
                    t.setDaemon(true);
                    t.start();
                } else {
                    for (InterProcessMutex m : locks) {
                        Thread t = new Thread(() -> {
                            try {
                                m.acquire();
                                m.release();
                            } catch (Exception e) {
                                e.printStackTrace();
                            }
                        });
                        t.setDaemon(true);
                        t.start();
                    }
                }
                say("{\"event\":\"started\"}");
            } else if (w[0].equals("snap") && w.length == 2) {
                if (w[1].equals("gc")) System.gc();
                say(memSnapshot(w[1]));
            } else if (w[0].equals("quit")) {
                break;
            } else {
                throw new IllegalArgumentException("unknown command " + line);
            }
        }
        c.close();
        return "{\"n\":" + n + "}";
    }

    public static void main(String[] args) throws Exception {
        for (int i = 3; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq > 0) params.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        String out;
        try {
            switch (args[0]) {
                case "uncontended": out = uncontended(args[1], args[2]); break;
                case "contended": case "queue": out = throughput(args[1], args[2], false); break;
                case "independent": out = throughput(args[1], args[2], true); break;
                case "rw": out = rw(args[1], args[2]); break;
                case "herd": out = herd(args[1], args[2]); break;
                case "drain": out = drain(args[1], args[2]); break;
                case "memory-one": case "memory-many": case "memory-hold":
                    out = memory(args[1], args[2], args[0].substring("memory-".length())); break;
                default: throw new IllegalArgumentException("unknown scenario " + args[0]);
            }
        } catch (Throwable e) {
            e.printStackTrace();
            System.exit(1);
            return;
        }
        say("{\"result\":" + out + "}");
        System.exit(0);
    }
}
