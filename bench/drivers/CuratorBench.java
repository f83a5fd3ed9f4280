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
 *   long-queue   sessions waiters holder timeout_s one process of zklock-bench load's queue; stdin-driven
 *   many-locks   sessions paths hold_us timeout_ms duration_ms proc   zklock-bench load's many locks; stdin-driven
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

    /** Microseconds since the Unix epoch: the clock every driver process of a zklock-bench load run shares. */
    private static long unixUs() {
        java.time.Instant now = java.time.Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1000;
    }

    /**
     * The mutual-exclusion check of zklock-bench load, across processes: a marker file per lock in the
     * directory ZKLOCK_BENCH_MARKERS (shared by every driver process of a run), created exclusively once
     * the lock is granted and removed before the release; a create that finds it there is a violation.
     */
    static final class Markers {
        final java.nio.file.Path dir;
        final AtomicLong violations = new AtomicLong(), errors = new AtomicLong();

        Markers() {
            String d = System.getenv("ZKLOCK_BENCH_MARKERS");
            if (d == null) throw new IllegalStateException("ZKLOCK_BENCH_MARKERS is not set");
            dir = java.nio.file.Paths.get(d);
        }

        /** Marks lock key as ours; false if it could not (a violation if the marker was there). */
        boolean enter(long key) {
            try {
                java.nio.file.Files.createFile(dir.resolve(Long.toString(key)));
                return true;
            } catch (java.nio.file.FileAlreadyExistsException e) {
                violations.incrementAndGet();
            } catch (java.io.IOException e) {
                errors.incrementAndGet();
            }
            return false;
        }

        /** Removes our marker of lock key (mine: enter made it). */
        void exit(long key, boolean mine) {
            if (!mine) return;
            try {
                java.nio.file.Files.delete(dir.resolve(Long.toString(key)));
            } catch (java.io.IOException e) {
                errors.incrementAndGet();
            }
        }
    }

    /** A growable array of longs (samples without boxing). */
    static final class Longs {
        long[] a = new long[1024];
        int n;

        void add(long v) {
            if (n == a.length) a = java.util.Arrays.copyOf(a, n * 2);
            a[n++] = v;
        }

        void addAll(Longs o) {
            for (int i = 0; i < o.n; i++) add(o.a[i]);
        }

        long[] array() {
            return java.util.Arrays.copyOf(a, n);
        }
    }

    /**
     * long-queue (zklock-bench load, issue 33 item 4), one process of several: waiters (a thread each)
     * over sessions, round robin, on the one lock path; with holder=1 the first session takes (and marks)
     * the lock first. Says ready, then on stdin: "enqueue" starts the waiters (each acquires once, marks,
     * releases at once), "release" releases the holder, anything else ends. The same protocol as the
     * Rust driver's long_queue.
     */
    static String longQueue(String hosts, String path) throws Exception {
        int sessions = (int) Math.max(1, num("sessions", 10));
        int waiters = (int) num("waiters", 100);
        long timeoutS = num("timeout_s", 900);
        Markers markers = new Markers();
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < sessions; i++) clients.add(connect(hosts));
        InterProcessMutex holder = null;
        boolean holderMine = false;
        if (num("holder", 0) == 1) {
            holder = new InterProcessMutex(clients.get(0), path);
            acquire(holder);
            // The holder marks its hold too: a waiter granted before the release is a violation.
            holderMine = markers.enter(0);
        }
        Longs grants = new Longs();
        AtomicLong failed = new AtomicLong(), releaseFailed = new AtomicLong();
        say("{\"event\":\"ready\"}");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.equals("enqueue")) {
                for (int i = 0; i < waiters; i++) {
                    final InterProcessMutex m = new InterProcessMutex(clients.get(i % sessions), path);
                    Thread t = new Thread(null, () -> {
                        boolean got;
                        try {
                            got = m.acquire(timeoutS, TimeUnit.SECONDS);
                        } catch (Throwable e) {
                            got = false;
                        }
                        if (!got) {
                            failed.incrementAndGet();
                            return;
                        }
                        long t0 = unixUs();
                        boolean mine = markers.enter(0);
                        markers.exit(0, mine);
                        try {
                            m.release();
                        } catch (Throwable e) {
                            releaseFailed.incrementAndGet();
                        }
                        synchronized (grants) {
                            grants.add(t0);
                        }
                    }, "q" + i, 256 * 1024);
                    t.setDaemon(true);
                    t.start();
                }
            } else if (line.equals("release")) {
                if (holder != null) {
                    markers.exit(0, holderMine);
                    holder.release();
                }
                holder = null;
                say("{\"event\":\"released\"}");
            } else {
                break;
            }
        }
        long[] g;
        synchronized (grants) {
            g = grants.array();
        }
        return "{\"grants\":" + g.length + ",\"grant_us\":" + list(g) + ",\"failed\":" + failed.get()
            + ",\"release_failed\":" + releaseFailed.get() + ",\"violations\":" + markers.violations.get()
            + ",\"marker_errors\":" + markers.errors.get() + "}";
    }

    /**
     * many-locks (zklock-bench load, issue 33 item 2), one process of several: sessions, one thread each,
     * looping for duration_ms from the "go" line on stdin (after ready): a lock of path/0 ..
     * path/(paths-1) at random (a new InterProcessMutex), acquire (timeout_ms), mark, hold hold_us,
     * unmark, release. Curator's mutex has no check of a held lock: a hold during which the session's
     * connection was SUSPENDED (Curator's advice: not known to be ours until RECONNECTED) is counted as
     * the Rust driver counts a check that finds the lock suspended; LOST events (Curator 5 posts LOST
     * when its own timer says the session timeout passed while disconnected, or on a real expiry) are
     * counted per session, and a LOST on a session whose id is the same at the end as at the start is a
     * false loss.
     */
    static String manyLocks(String hosts, String path) throws Exception {
        int sessions = (int) Math.max(1, num("sessions", 100));
        long paths = Math.max(1, num("paths", 10_000));
        long holdUs = num("hold_us", 5000), timeoutMs = num("timeout_ms", 30_000);
        long durationMs = num("duration_ms", 60_000), proc = num("proc", 0);
        Markers markers = new Markers();
        List<CuratorFramework> clients = new ArrayList<>();
        long[] ids = new long[sessions];
        AtomicLong[] lost = new AtomicLong[sessions], suspends = new AtomicLong[sessions];
        for (int i = 0; i < sessions; i++) {
            CuratorFramework c = connect(hosts);
            final AtomicLong l = new AtomicLong(), s = new AtomicLong();
            lost[i] = l;
            suspends[i] = s;
            c.getConnectionStateListenable().addListener((client, state) -> {
                if (state == org.apache.curator.framework.state.ConnectionState.LOST) l.incrementAndGet();
                if (state == org.apache.curator.framework.state.ConnectionState.SUSPENDED) s.incrementAndGet();
            });
            ids[i] = c.getZookeeperClient().getZooKeeper().getSessionId();
            clients.add(c);
        }
        say("{\"event\":\"ready\"}");
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        final long end = System.nanoTime() + durationMs * 1_000_000L;
        Longs grantUs = new Longs(), latUs = new Longs();
        Map<String, Long> failed = new java.util.TreeMap<>();
        long[] counts = new long[2]; // suspended holds, failed releases
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < sessions; i++) {
            final CuratorFramework c = clients.get(i);
            final AtomicLong s = suspends[i];
            final java.util.Random rnd = new java.util.Random((proc << 32) ^ i ^ 0x9e3779b97f4a7c15L);
            Thread t = new Thread(null, () -> {
                Longs g = new Longs(), lat = new Longs();
                Map<String, Long> fail = new HashMap<>();
                long suspended = 0, releaseFailed = 0;
                while (System.nanoTime() < end) {
                    long key = (long) (rnd.nextDouble() * paths);
                    InterProcessMutex m = new InterProcessMutex(c, path + "/" + key);
                    long t0 = System.nanoTime();
                    String why = null;
                    try {
                        if (!m.acquire(timeoutMs, TimeUnit.MILLISECONDS)) why = "TIMEOUT";
                    } catch (Throwable e) {
                        why = e.getClass().getSimpleName();
                    }
                    if (why != null) {
                        fail.merge(why, 1L, Long::sum);
                        try {
                            Thread.sleep(10);
                        } catch (InterruptedException e) {
                            break;
                        }
                        continue;
                    }
                    lat.add((System.nanoTime() - t0) / 1000);
                    g.add(unixUs());
                    long s0 = s.get();
                    boolean mine = markers.enter(key);
                    try {
                        TimeUnit.MICROSECONDS.sleep(holdUs);
                    } catch (InterruptedException e) {
                        break;
                    }
                    if (s.get() != s0) suspended++;
                    markers.exit(key, mine);
                    try {
                        m.release();
                    } catch (Throwable e) {
                        releaseFailed++;
                    }
                }
                synchronized (counts) {
                    grantUs.addAll(g);
                    latUs.addAll(lat);
                    for (Map.Entry<String, Long> e : fail.entrySet()) failed.merge(e.getKey(), e.getValue(), Long::sum);
                    counts[0] += suspended;
                    counts[1] += releaseFailed;
                }
            }, "m" + i, 256 * 1024);
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) t.join();
        long lostEvents = 0, falseLosses = 0, changed = 0;
        for (int i = 0; i < sessions; i++) {
            boolean same = clients.get(i).getZookeeperClient().getZooKeeper().getSessionId() == ids[i];
            lostEvents += lost[i].get();
            if (same) falseLosses += lost[i].get();
            else changed++;
        }
        StringBuilder f = new StringBuilder("{");
        for (Map.Entry<String, Long> e : failed.entrySet()) {
            if (f.length() > 1) f.append(',');
            f.append('"').append(e.getKey()).append("\":").append(e.getValue());
        }
        f.append('}');
        return "{\"grants\":" + grantUs.n + ",\"grant_us\":" + list(grantUs.array()) + ",\"lat_us\":"
            + list(latUs.array()) + ",\"failed\":" + f + ",\"suspended_checks\":" + counts[0] + ",\"lost\":"
            + lostEvents + ",\"false_losses\":" + falseLosses + ",\"release_failed\":" + counts[1]
            + ",\"violations\":" + markers.violations.get() + ",\"marker_errors\":" + markers.errors.get()
            + ",\"sessions_expired\":" + lostEvents + ",\"sessions_changed\":" + changed + "}";
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
                case "long-queue": out = longQueue(args[1], args[2]); break;
                case "many-locks": out = manyLocks(args[1], args[2]); break;
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
