/*
 * leader.c - a leader-style task with libzklock: several scheduler nodes run
 * this same program and join the election /examples/scheduler/leader
 * (zklock_election_new); the leader polls task status every 200 ms, the
 * others wait in acquire. When the leader dies, its session expires and
 * another instance takes over within the session timeout; when it stops
 * cleanly (Ctrl-C, SIGTERM) it resigns and the next one takes over at once.
 *
 *     cc -std=c11 -Wall -Wextra -Werror leader.c $(pkg-config --cflags --libs zklock) -lpthread -o
 * leader
 *     ./leader 127.0.0.1:2181 node-1 [SESSION_TIMEOUT_MS]     # in several terminals
 *
 * From the repository without `make install` (after `make ffi`, which builds
 * target/debug/libzklock.so; run.sh links it as target/c/lib/libzklock.so.0):
 *
 *     cc -std=c11 -Iinclude zklock-ffi/examples/leader.c -Ltarget/c/lib -lzklock -lpthread -o
 * leader LD_LIBRARY_PATH=target/c/lib ./leader 127.0.0.1:2181 node-1
 *
 * It prints, one line each:
 *
 *     instance ID waiting to lead
 *     instance ID is leader (token N)
 *     leader ID polling tasks (token N)        every 200 ms while leading
 *     instance ID stopped leading: REASON      lock lost or suspended
 *     instance ID exiting
 *
 * The fencing token N grows with every change of leader: give it to
 * whatever the leader writes to, so that a deposed leader that did not
 * notice in time (paused, partitioned) is refused there.
 */
#define _POSIX_C_SOURCE 200809L
#include <zklock.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LEADER_PATH "/examples/scheduler/leader"
#define POLL_MS 200

static atomic_bool g_stop;     /* set by the signal thread */
static atomic_bool g_finished; /* set by main when it no longer waits */

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

/* Waits for SIGINT / SIGTERM (blocked in every other thread), then stops
 * main: sets g_stop and cancels a waiting acquire. The cancel is repeated
 * because it only affects an acquire already waiting when it comes. */
static void *signal_thread(void *arg) {
    const zklock_lock *lock = (const zklock_lock *)arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    int sig = 0;
    if (sigwait(&set, &sig) != 0) return NULL;
    atomic_store(&g_stop, true);
    for (int i = 0; i < 200 && !atomic_load(&g_finished); i++) { /* at most 10 s */
        zklock_lock_cancel(lock);
        sleep_ms(50);
    }
    return NULL;
}

/* The leader's work; a real scheduler would read task states here and
 * write with the fencing token. */
static void poll_tasks(const char *id, uint64_t token) {
    printf("leader %s polling tasks (token %" PRIu64 ")\n", id, token);
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s HOSTS ID [SESSION_TIMEOUT_MS]\n", argv[0]);
        return 2;
    }
    const char *hosts = argv[1], *id = argv[2];
    long session_ms = argc > 3 ? atol(argv[3]) : 10000;
    if (session_ms <= 0) {
        fprintf(stderr, "SESSION_TIMEOUT_MS must be a positive number\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* one line at a time, also into a pipe or file */

    /* Block the stop signals before any thread exists (zklock's threads
     * inherit the mask); signal_thread receives them. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    zklock_client *zk = NULL;
    zklock_lock *lock = NULL;
    zklock_error *err = NULL;
    zklock_code rc;
    zklock_client_options opts;
    zklock_client_options_init(&opts, sizeof opts);
    opts.session_timeout_ms = (uint32_t)session_ms;
    if ((rc = zklock_client_new(hosts, &opts, &zk, &err)) != ZKLOCK_OK) {
        fprintf(stderr, "connect: %s: %s\n", zklock_code_name(rc), zklock_error_message(err));
        zklock_error_free(err);
        return 1;
    }
    /* A participant of the election (Curator LeaderLatch layout), with our
     * id stored in its node: acquiring it waits until we lead. */
    if ((rc = zklock_election_new(zk, LEADER_PATH, id, &lock, &err)) != ZKLOCK_OK) {
        fprintf(stderr, "zklock_election_new: %s: %s\n", zklock_code_name(rc),
                zklock_error_message(err));
        zklock_error_free(err);
        zklock_client_free(zk);
        return 1;
    }
    pthread_t sig_thread;
    if (pthread_create(&sig_thread, NULL, signal_thread, lock) != 0) {
        fprintf(stderr, "pthread_create failed\n");
        zklock_lock_free(lock);
        zklock_client_free(zk);
        return 1;
    }

    while (!atomic_load(&g_stop)) {
        printf("instance %s waiting to lead\n", id);
        zklock_guard *g = NULL;
        rc = zklock_lock_acquire(lock, -1, &g, &err); /* until we lead */
        if (rc == ZKLOCK_CANCELLED) break;
        if (rc != ZKLOCK_OK) { /* e.g. no connection: try again a little later */
            fprintf(stderr, "instance %s: acquire: %s: %s\n", id, zklock_code_name(rc),
                    zklock_error_message(err));
            zklock_error_free(err);
            err = NULL;
            sleep_ms(1000);
            continue;
        }
        uint64_t token = zklock_guard_fencing_token(g);
        printf("instance %s is leader (token %" PRIu64 ")\n", id, token);
        while (!atomic_load(&g_stop)) {
            /* Before each round of work: still safely the leader? */
            if ((rc = zklock_guard_check(g, &err)) != ZKLOCK_OK) {
                printf("instance %s stopped leading: %s\n", id, zklock_code_name(rc));
                zklock_error_free(err);
                err = NULL;
                break;
            }
            poll_tasks(id, token);
            sleep_ms(POLL_MS);
        }
        /* Hand over (a lost lock answers LOCK_LOST here: nothing to do). */
        zklock_guard_release(g, NULL, NULL);
        zklock_guard_free(g);
    }
    atomic_store(&g_finished, true);
    printf("instance %s exiting\n", id);
    pthread_kill(sig_thread, SIGTERM); /* wakes sigwait if no signal came */
    pthread_join(sig_thread, NULL);
    zklock_lock_free(lock);
    zklock_client_free(zk);
    return 0;
}
