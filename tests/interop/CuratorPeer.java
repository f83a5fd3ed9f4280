/**
 * Apache Curator 5.x lock peer for zklock's interoperability tests
 * (zklock-core/tests/interop.rs).
 *
 * <p>Takes a real Curator lock on a ZooKeeper path that zklock contenders
 * use at the same time, so that the tests can check that the two libraries
 * exclude each other. Compiled with javac against the Debian jars
 * (libcurator-recipes-java) into target/interop/ by the test itself.
 *
 * <pre>
 * java CuratorPeer HOSTS LOCK_PATH KIND ROUNDS CHECKER_PORT PEER_ID
 *   KIND          mutex (InterProcessMutex),
 *                 read | write (InterProcessReadWriteLock.readLock() / writeLock()),
 *                 latch (LeaderLatch with id PEER_ID: "acquire" is start() and
 *                 await() until leader, "release" is close()),
 *                 multi (InterProcessMultiLock over LOCK_PATH/a and LOCK_PATH/b),
 *                 lease (InterProcessSemaphoreV2 with 2 leases: "acquire" takes
 *                 one lease, "release" returns it; reports as side S),
 *                 lease-shared (InterProcessSemaphoreV2 whose permits are
 *                 the SharedCount at LOCK_PATH-count; hold mode),
 *                 revocable (InterProcessMutex.makeRevocable: prints
 *                 "REVOCATION REQUESTED" when asked to let go; hold mode),
 *                 revoke (Revoker.attemptRevoke on LOCK_PATH, a holder's
 *                 node: prints "REVOKED" and exits 0)
 *   ROUNDS        number of rounds, or the word "hold"
 *   CHECKER_PORT  TCP port of the test's checker on 127.0.0.1 (0: none, hold mode only)
 *   PEER_ID       name used in the checker's messages
 * </pre>
 *
 * <p>Loop mode: connects, prints {@code READY}, waits for one line on stdin
 * (the start signal), then for each round: acquire (60 s, failing loudly),
 * {@code enter W|R id} to the checker, sleep 5-20 ms, {@code exit W|R id},
 * release, then sleep 0-15 ms before the next round (so that the queue order
 * keeps changing). Each checker message waits for its {@code ok} answer. Prints
 * {@code DONE} and exits 0 when every round is done.
 *
 * <p>Hold mode: connects, prints {@code READY}, acquires once (60 s), prints
 * {@code HELD}, waits for a line (or end of input) on stdin, releases,
 * prints {@code RELEASED} and exits 0.
 *
 * <p>Any failure prints a message on stderr and exits non-zero. A watchdog
 * ends the process after 150 s, and the end of stdin in loop mode ends it
 * at once, so a dead test never leaves a peer behind.
 */
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorPeer {
    private static final int SESSION_TIMEOUT_MS = 10_000;
    private static final long ACQUIRE_TIMEOUT_S = 60;
    private static final long WATCHDOG_MS = 150_000;

    private CuratorPeer() {}

    /** Prints a line on stdout at once (the test reads it). */
    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** Prints the reason on stderr and exits with {@code code}. */
    private static void fail(int code, String message, Throwable cause) {
        System.err.println("CuratorPeer: " + message);
        if (cause != null) {
            cause.printStackTrace();
        }
        System.err.flush();
        Runtime.getRuntime().halt(code);
    }

    /** What a round takes and gives back: a lock, or a leadership. */
    private interface Taken {
        /** Waits at most {@code seconds}; false when the time ran out. */
        boolean acquire(long seconds) throws Exception;

        void release() throws Exception;
    }

    /** A Curator lock as a {@link Taken}. */
    private static Taken ofLock(InterProcessLock lock) {
        return new Taken() {
            @Override
            public boolean acquire(long seconds) throws Exception {
                return lock.acquire(seconds, TimeUnit.SECONDS);
            }

            @Override
            public void release() throws Exception {
                lock.release();
            }
        };
    }

    /** Leadership of a new LeaderLatch per round as a {@link Taken}. */
    private static Taken ofLatch(CuratorFramework client, String path, String id) {
        return new Taken() {
            private LeaderLatch latch;

            @Override
            public boolean acquire(long seconds) throws Exception {
                latch = new LeaderLatch(client, path, id);
                latch.start();
                if (latch.await(seconds, TimeUnit.SECONDS)) {
                    return true;
                }
                latch.close();
                return false;
            }

            @Override
            public void release() throws Exception {
                latch.close();
            }
        };
    }

    /** One lease of a semaphore per round as a {@link Taken}. */
    private static Taken ofLease(InterProcessSemaphoreV2 semaphore) {
        return new Taken() {
            private Lease lease;

            @Override
            public boolean acquire(long seconds) throws Exception {
                lease = semaphore.acquire(seconds, TimeUnit.SECONDS);
                return lease != null;
            }

            @Override
            public void release() throws Exception {
                semaphore.returnLease(lease);
            }
        };
    }

    /** The test's checker: one line per message, each answered "ok". */
    private static final class Checker {
        private final Socket socket;
        private final OutputStream out;
        private final BufferedReader in;

        Checker(int port) throws Exception {
            socket = new Socket("127.0.0.1", port);
            socket.setTcpNoDelay(true);
            out = socket.getOutputStream();
            in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
        }

        void send(String line) throws Exception {
            out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
            out.flush();
            String answer = in.readLine();
            if (!"ok".equals(answer)) {
                throw new IllegalStateException("checker answered " + answer + " to " + line);
            }
        }
    }

    /** Runs the peer (see the class comment); exits the JVM on any failure. */
    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable t) {
            fail(1, "failed: " + t, t);
        }
    }

    private static void run(String[] args) throws Exception {
        if (args.length != 6) {
            fail(2, "usage: CuratorPeer HOSTS LOCK_PATH mutex|read|write|latch|multi|lease|lease-shared|revocable|revoke ROUNDS|hold CHECKER_PORT PEER_ID", null);
        }
        String hosts = args[0];
        String path = args[1];
        String kind = args[2];
        boolean hold = args[3].equals("hold");
        int rounds = hold ? 1 : Integer.parseInt(args[3]);
        int port = Integer.parseInt(args[4]);
        String id = args[5];
        String side = kind.equals("read") ? "R" : kind.equals("lease") ? "S" : "W";

        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(WATCHDOG_MS);
            } catch (InterruptedException e) {
                return;
            }
            fail(5, id + ": watchdog: still running after " + WATCHDOG_MS + " ms", null);
        });
        watchdog.setDaemon(true);
        watchdog.start();

        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(hosts)
                .sessionTimeoutMs(SESSION_TIMEOUT_MS)
                .connectionTimeoutMs(5_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5))
                .build();
        client.start();
        if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
            fail(3, id + ": could not connect to " + hosts, null);
        }

        Taken lock;
        switch (kind) {
            case "mutex":
                lock = ofLock(new InterProcessMutex(client, path));
                break;
            case "read":
                lock = ofLock(new InterProcessReadWriteLock(client, path).readLock());
                break;
            case "write":
                lock = ofLock(new InterProcessReadWriteLock(client, path).writeLock());
                break;
            case "latch":
                lock = ofLatch(client, path, id);
                break;
            case "multi":
                lock = ofLock(new InterProcessMultiLock(client, Arrays.asList(path + "/a", path + "/b")));
                break;
            case "lease":
                lock = ofLease(new InterProcessSemaphoreV2(client, path, 2));
                break;
            case "lease-shared": {
                // Permits from the SharedCount at LOCK_PATH-count (seed 1,
                // kept if the node exists).
                SharedCount count = new SharedCount(client, path + "-count", 1);
                count.start();
                lock = ofLease(new InterProcessSemaphoreV2(client, path, count));
                break;
            }
            case "revocable": {
                InterProcessMutex mutex = new InterProcessMutex(client, path);
                mutex.makeRevocable(m -> say("REVOCATION REQUESTED"));
                lock = ofLock(mutex);
                break;
            }
            case "revoke":
                // LOCK_PATH is the holder's node: ask it to let go, once.
                Revoker.attemptRevoke(client, path);
                say("REVOKED");
                client.close();
                System.exit(0);
                return;
            default:
                fail(2, "unknown kind " + kind + " (mutex, read, write, latch, multi, lease, lease-shared, revocable or revoke)", null);
                return;
        }
        Checker checker = port == 0 ? null : new Checker(port);
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

        say("READY");
        if (hold) {
            if (!lock.acquire(ACQUIRE_TIMEOUT_S)) {
                fail(4, id + ": " + kind + " lock on " + path + " not acquired within " + ACQUIRE_TIMEOUT_S + " s", null);
            }
            if (checker != null) {
                checker.send("enter " + side + " " + id);
            }
            say("HELD");
            stdin.readLine(); // a line or the end of input: release
            if (checker != null) {
                checker.send("exit " + side + " " + id);
            }
            lock.release();
            say("RELEASED");
        } else {
            if (stdin.readLine() == null) {
                fail(6, id + ": stdin closed before the start signal", null);
            }
            // The test closes our stdin only when it gives up on us.
            Thread eof = new Thread(() -> {
                try {
                    while (stdin.readLine() != null) {
                        // ignore
                    }
                } catch (Exception e) {
                    // fall through
                }
                fail(6, id + ": stdin closed while running", null);
            });
            eof.setDaemon(true);
            eof.start();
            for (int round = 0; round < rounds; round++) {
                if (!lock.acquire(ACQUIRE_TIMEOUT_S)) {
                    fail(4, id + ": round " + round + ": " + kind + " lock on " + path + " not acquired within "
                            + ACQUIRE_TIMEOUT_S + " s", null);
                }
                checker.send("enter " + side + " " + id);
                Thread.sleep(ThreadLocalRandom.current().nextLong(5, 21));
                checker.send("exit " + side + " " + id);
                lock.release();
                Thread.sleep(ThreadLocalRandom.current().nextLong(0, 16));
            }
            say("DONE");
        }
        client.close();
        System.exit(0);
    }
}
