/*
 * demo_worker.c - the C worker of `make demo` (zklock-core/examples/demo.rs
 * starts it next to the Python, Node and Rust workers, all on one ZooKeeper).
 *
 * It takes turns on an exclusive lock, then on a read/write lock, stands once
 * in a leader election (leads, then resigns), and takes leases of a semaphore
 * of 2, and prints one line per event on stdout for the demo to merge into a
 * timeline:
 *
 *     READY lang=c pid=P phase=PHASE t_ns=T     (then waits for a line on stdin)
 *     HOLD lang=c lock=PATH mode=MODE round=R token=N waited_ms=W t_ns=T
 *     RELEASE lang=c lock=PATH mode=MODE round=R token=N t_ns=T
 *     DONE lang=c t_ns=T
 *
 * PHASE is mutex, rw, election or semaphore; MODE exclusive, read, write,
 * leader or lease.
 *
 * t_ns is CLOCK_MONOTONIC (the same clock in every process of the machine).
 * HOLD is printed after the acquire returned, RELEASE before the release is
 * sent, so the printed intervals lie inside the real holding intervals.
 *
 * Build and run by hand (from the repository, after `make ffi`):
 *
 *     cc -std=c11 -Wall -Wextra -Werror -Iinclude zklock-ffi/examples/demo_worker.c \
 *        -o demo_worker -Ltarget/demo/lib -lzklock
 *     LD_LIBRARY_PATH=target/demo/lib ./demo_worker 127.0.0.1:2181 /demo/mutex /demo/rw 3 wrw \
 *         /demo/leader /demo/pool
 *
 * (target/demo/lib holds the symlink libzklock.so.0 -> ../../debug/libzklock.so
 * that `make demo` makes; with an installed libzklock use
 * `$(pkg-config --cflags --libs zklock)` instead.) Arguments: connect string,
 * exclusive lock path, read/write lock path, rounds on the exclusive lock
 * (and on the semaphore), one letter per round on the read/write lock
 * (r = read, w = write), election path, semaphore path. Exit status 0 when
 * every round went through, 1 otherwise.
 */
#define _POSIX_C_SOURCE 200809L
#include <zklock.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How long each grant is held (the same in every demo worker). */
#define HOLD_EXCLUSIVE_MS 150
#define HOLD_READ_MS 300
#define HOLD_WRITE_MS 150
#define HOLD_LEADER_MS 150
#define HOLD_LEASE_MS 300
/* The semaphore's leases (the same in every demo worker). */
#define PERMITS 2

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

static int fail(const char *what, zklock_code rc, zklock_error *err) {
    fprintf(stderr, "c worker: %s: %s: %s\n", what, zklock_code_name(rc),
            err ? zklock_error_message(err) : "");
    zklock_error_free(err);
    return 1;
}

/* Announces a phase and waits for the demo's "go" line on stdin. */
static int ready(const char *phase) {
    printf("READY lang=c pid=%ld phase=%s t_ns=%lld\n", (long)getpid(), phase, now_ns());
    char line[64];
    if (fgets(line, sizeof line, stdin) == NULL) {
        fprintf(stderr, "c worker: stdin closed before the start of phase %s\n", phase);
        return 1;
    }
    return 0;
}

/* One round: acquire (no deadline: the demo bounds the whole run), hold,
 * check, release. */
static int round_on(const zklock_lock *lock, const char *path, const char *mode, int round,
                    long hold_ms) {
    zklock_guard *g = NULL;
    zklock_error *err = NULL;
    long long start = now_ns();
    zklock_code rc = zklock_lock_acquire(lock, -1, &g, &err);
    if (rc != ZKLOCK_OK) return fail("acquire", rc, err);
    long long held = now_ns();
    uint64_t token = zklock_guard_fencing_token(g);
    printf("HOLD lang=c lock=%s mode=%s round=%d token=%" PRIu64 " waited_ms=%lld t_ns=%lld\n",
           path, mode, round, token, (held - start) / 1000000, held);
    sleep_ms(hold_ms); /* the "work" */
    int status = 0;
    /* Before acting on the work: is the lock still safely ours? */
    if ((rc = zklock_guard_check(g, &err)) != ZKLOCK_OK) status = fail("check", rc, err);
    printf("RELEASE lang=c lock=%s mode=%s round=%d token=%" PRIu64 " t_ns=%lld\n", path, mode,
           round, token, now_ns());
    if ((rc = zklock_guard_release(g, NULL, &err)) != ZKLOCK_OK) status = fail("release", rc, err);
    zklock_guard_free(g);
    return status;
}

int main(int argc, char **argv) {
    if (argc != 8) {
        fprintf(stderr,
                "usage: %s HOSTS MUTEX_PATH RW_PATH ROUNDS RW_MODES ELECTION_PATH SEMAPHORE_PATH "
                "(e.g. wrw)\n",
                argv[0]);
        return 2;
    }
    const char *hosts = argv[1], *mutex_path = argv[2], *rw_path = argv[3];
    int rounds = atoi(argv[4]);
    const char *rw_modes = argv[5], *election_path = argv[6], *semaphore_path = argv[7];
    setvbuf(stdout, NULL, _IOLBF, 0); /* one line per event, also into a pipe */

    zklock_client *zk = NULL;
    zklock_lock *mutex = NULL, *rd = NULL, *wr = NULL, *election = NULL, *pool = NULL;
    zklock_error *err = NULL;
    zklock_code rc;
    int status = 1;

    zklock_client_options opts;
    zklock_client_options_init(&opts, sizeof opts);
    opts.session_timeout_ms = 10000;
    if ((rc = zklock_client_new(hosts, &opts, &zk, &err)) != ZKLOCK_OK)
        return fail("connect", rc, err);
    if ((rc = zklock_lock_new(zk, mutex_path, ZKLOCK_MODE_EXCLUSIVE, &mutex, &err)) != ZKLOCK_OK) {
        fail("zklock_lock_new", rc, err);
        goto out;
    }
    if ((rc = zklock_rwlock_new(zk, rw_path, &rd, &wr, &err)) != ZKLOCK_OK) {
        fail("zklock_rwlock_new", rc, err);
        goto out;
    }
    if ((rc = zklock_election_new(zk, election_path, "c", &election, &err)) != ZKLOCK_OK) {
        fail("zklock_election_new", rc, err);
        goto out;
    }
    if ((rc = zklock_semaphore_new(zk, semaphore_path, PERMITS, NULL, &pool, &err)) != ZKLOCK_OK) {
        fail("zklock_semaphore_new", rc, err);
        goto out;
    }

    if (ready("mutex")) goto out;
    for (int r = 1; r <= rounds; r++)
        if (round_on(mutex, mutex_path, "exclusive", r, HOLD_EXCLUSIVE_MS)) goto out;

    if (ready("rw")) goto out;
    for (int r = 1; rw_modes[r - 1] != '\0'; r++) {
        int write = rw_modes[r - 1] == 'w';
        if (round_on(write ? wr : rd, rw_path, write ? "write" : "read", r,
                     write ? HOLD_WRITE_MS : HOLD_READ_MS))
            goto out;
    }

    if (ready("election")) goto out;
    /* Leads once, then resigns. */
    if (round_on(election, election_path, "leader", 1, HOLD_LEADER_MS)) goto out;

    if (ready("semaphore")) goto out;
    for (int r = 1; r <= rounds; r++)
        if (round_on(pool, semaphore_path, "lease", r, HOLD_LEASE_MS)) goto out;
    printf("DONE lang=c t_ns=%lld\n", now_ns());
    status = 0;

out:
    zklock_lock_free(mutex);
    zklock_lock_free(rd);
    zklock_lock_free(wr);
    zklock_lock_free(election);
    zklock_lock_free(pool);
    zklock_client_free(zk);
    return status;
}
