/*
 * Benchmark driver for zklock's C library (libzklock), for `make bench`.
 *
 *   bench_c SCENARIO HOSTS PATH [key=value ...]
 *
 * Scenarios: uncontended, contended, queue, independent, rw (see
 * bench/README.md); one pthread per waiter. Prints one JSON line
 * {"result": {...}} on stdout.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <zklock.h>

static int nparams;
static char **params;

static long num(const char *key, long dflt) {
    size_t n = strlen(key);
    for (int i = 0; i < nparams; i++)
        if (strncmp(params[i], key, n) == 0 && params[i][n] == '=') return atol(params[i] + n + 1);
    return dflt;
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* CPU time (user + system) of this process so far, in seconds. */
static double cpu_s(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

/* Tells the runner the measured part starts or ends (it reads the server's
 * CPU time then). */
static void event(const char *name) {
    printf("{\"event\":\"%s\"}\n", name);
    fflush(stdout);
}

static void die(const char *what, zklock_error *err) {
    fprintf(stderr, "bench_c: %s: %s\n", what, err ? zklock_error_message(err) : "failed");
    exit(1);
}

static zklock_client *connect_client(const char *hosts) {
    zklock_client *c = NULL;
    zklock_error *err = NULL;
    if (zklock_client_new(hosts, NULL, &c, &err) != ZKLOCK_OK) die("connect", err);
    return c;
}

static zklock_lock *new_lock(zklock_client *c, const char *path, zklock_mode mode) {
    zklock_lock *l = NULL;
    zklock_error *err = NULL;
    if (zklock_lock_new(c, path, mode, &l, &err) != ZKLOCK_OK) die("lock", err);
    return l;
}

static zklock_guard *acquire(zklock_lock *l) {
    zklock_guard *g = NULL;
    zklock_error *err = NULL;
    if (zklock_lock_acquire(l, 120000, &g, &err) != ZKLOCK_OK) die("acquire", err);
    return g;
}

static void release(zklock_guard *g) {
    zklock_error *err = NULL;
    if (zklock_guard_release(g, NULL, &err) != ZKLOCK_OK) die("release", err);
    zklock_guard_free(g);
}

static void uncontended(const char *hosts, const char *path) {
    long iters = num("iters", 1000), warmup = num("warmup", 100), hold_us = num("hold_us", 0);
    zklock_client *c = connect_client(hosts);
    zklock_lock *l = new_lock(c, path, ZKLOCK_MODE_EXCLUSIVE);
    double *lat = calloc((size_t)iters, sizeof *lat);
    struct timespec hold = {hold_us / 1000000, (hold_us % 1000000) * 1000};
    double cpu0 = 0;
    for (long i = 0; i < warmup + iters; i++) {
        if (i == warmup) {
            event("measuring");
            cpu0 = cpu_s();
        }
        double t = now_us();
        zklock_guard *g = acquire(l);
        if (hold_us > 0) nanosleep(&hold, NULL);
        release(g);
        if (i >= warmup) lat[i - warmup] = now_us() - t;
    }
    double cpu = cpu_s() - cpu0;
    event("measured");
    printf("{\"result\":{\"cpu_s\":%.6f,\"lat_us\":[", cpu);
    for (long i = 0; i < iters; i++) printf("%s%.1f", i ? "," : "", lat[i]);
    printf("]}}\n");
    free(lat);
    zklock_lock_free(l);
    zklock_client_free(c);
}

struct shared {
    double from, end;
    long hold_us;
    int readers;
    pthread_barrier_t barrier;
    pthread_mutex_t mx;
    int state[2];
    atomic_long violations;
};

struct worker {
    struct shared *s;
    zklock_lock *lock;
    atomic_int *inside; /* exclusive scenarios */
    int writer;         /* rw: 1 writer, 0 reader, -1 exclusive */
    long grants;
};

static void *run_worker(void *arg) {
    struct worker *w = arg;
    struct shared *s = w->s;
    pthread_barrier_wait(&s->barrier);
    while (now_us() < s->end) {
        zklock_guard *g = acquire(w->lock);
        if (w->writer < 0) {
            if (atomic_fetch_add(w->inside, 1) != 0) atomic_fetch_add(&s->violations, 1);
        } else {
            pthread_mutex_lock(&s->mx);
            s->state[w->writer]++;
            if (s->state[1] > 1 || (s->state[1] == 1 && s->state[0] > 0))
                atomic_fetch_add(&s->violations, 1);
            pthread_mutex_unlock(&s->mx);
        }
        double t = now_us();
        if (t >= s->from && t < s->end) w->grants++;
        if (s->hold_us > 0) {
            struct timespec d = {s->hold_us / 1000000, (s->hold_us % 1000000) * 1000};
            nanosleep(&d, NULL);
        }
        if (w->writer < 0) {
            atomic_fetch_sub(w->inside, 1);
        } else {
            pthread_mutex_lock(&s->mx);
            s->state[w->writer]--;
            pthread_mutex_unlock(&s->mx);
        }
        release(g);
    }
    return NULL;
}

/* drain: a waiter acquires once and releases at once. */
struct drainer {
    zklock_lock *lock;
    atomic_int *inside, *violations;
    double *last;
    pthread_mutex_t *mx;
};

static void *run_drainer(void *arg) {
    struct drainer *d = arg;
    zklock_guard *g = acquire(d->lock);
    if (atomic_fetch_add(d->inside, 1) != 0) atomic_fetch_add(d->violations, 1);
    atomic_fetch_sub(d->inside, 1);
    release(g);
    pthread_mutex_lock(d->mx);
    *d->last = now_us();
    pthread_mutex_unlock(d->mx);
    return NULL;
}

static size_t queue_len(zklock_client *c, const char *path) {
    zklock_participants *p = NULL;
    zklock_error *err = NULL;
    if (zklock_client_participants(c, path, &p, &err) != ZKLOCK_OK) {
        zklock_error_free(err);
        return 0;
    }
    size_t n = zklock_participants_len(p);
    zklock_participants_free(p);
    return n;
}

/* drain: waiters (threads over sessions) queue behind a holder and acquire
 * once each; timed from the holder's release to the last release. Repeated
 * `rounds` times, the first not counted. */
static void drain(const char *hosts, const char *path) {
    int sessions = (int)num("sessions", 8), waiters = (int)num("waiters", 32),
        rounds = (int)num("rounds", 3);
    if (sessions < 1) sessions = 1;
    if (rounds < 2) rounds = 2;
    zklock_client **clients = calloc((size_t)sessions, sizeof *clients);
    for (int i = 0; i < sessions; i++) clients[i] = connect_client(hosts);
    atomic_int inside, violations;
    atomic_init(&inside, 0);
    atomic_init(&violations, 0);
    double last = 0, window = 0;
    pthread_mutex_t mx;
    pthread_mutex_init(&mx, NULL);
    struct drainer *ds = calloc((size_t)waiters, sizeof *ds);
    pthread_t *th = calloc((size_t)waiters, sizeof *th);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    for (int round = 0; round < rounds; round++) {
        zklock_lock *hl = new_lock(clients[0], path, ZKLOCK_MODE_EXCLUSIVE);
        zklock_guard *holder = acquire(hl);
        for (int i = 0; i < waiters; i++) {
            ds[i] = (struct drainer){new_lock(clients[i % sessions], path, ZKLOCK_MODE_EXCLUSIVE),
                                     &inside, &violations, &last, &mx};
            if (pthread_create(&th[i], &attr, run_drainer, &ds[i]) != 0) {
                fprintf(stderr, "bench_c: thread\n");
                exit(1);
            }
        }
        double until = now_us() + 120e6;
        while (queue_len(clients[0], path) < (size_t)waiters + 1) {
            if (now_us() > until) {
                fprintf(stderr, "bench_c: the waiters did not all queue\n");
                exit(1);
            }
            struct timespec d = {0, 5000000};
            nanosleep(&d, NULL);
        }
        double start = now_us();
        release(holder);
        for (int i = 0; i < waiters; i++) {
            pthread_join(th[i], NULL);
            zklock_lock_free(ds[i].lock);
        }
        zklock_lock_free(hl);
        if (round > 0) window += last - start;
    }
    printf("{\"result\":{\"grants\":%d,\"window_s\":%.6f,\"violations\":%d}}\n",
           waiters * (rounds - 1), window / 1e6, atomic_load(&violations));
    for (int i = 0; i < sessions; i++) zklock_client_free(clients[i]);
    free(ds);
    free(th);
    free(clients);
}

/* kind: 0 contended/queue, 1 independent, 2 rw */
static void workers(const char *hosts, const char *path, int kind) {
    int sessions, waiters;
    if (kind == 2) {
        sessions = waiters = (int)(num("readers", 8) + num("writers", 2));
    } else {
        sessions = (int)num("sessions", 2);
        waiters = (int)num("waiters", sessions);
    }
    struct shared s;
    memset(&s, 0, sizeof s);
    s.readers = (int)num("readers", 8);
    s.hold_us = kind == 2 ? num("hold_us", 1000) : 0;
    pthread_barrier_init(&s.barrier, NULL, (unsigned)waiters + 1);
    pthread_mutex_init(&s.mx, NULL);
    atomic_init(&s.violations, 0);
    zklock_client **clients = calloc((size_t)sessions, sizeof *clients);
    for (int i = 0; i < sessions; i++) clients[i] = connect_client(hosts);
    struct worker *ws = calloc((size_t)waiters, sizeof *ws);
    atomic_int *inside = calloc((size_t)waiters, sizeof *inside);
    pthread_t *th = calloc((size_t)waiters, sizeof *th);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    char p[512];
    for (int i = 0; i < waiters; i++) {
        ws[i].s = &s;
        ws[i].writer = kind == 2 ? (i >= s.readers) : -1;
        ws[i].inside = &inside[kind == 1 ? i : 0];
        if (kind == 1)
            snprintf(p, sizeof p, "%s/%d", path, i);
        else
            snprintf(p, sizeof p, "%s", path);
        zklock_mode mode = kind != 2      ? ZKLOCK_MODE_EXCLUSIVE
                           : ws[i].writer ? ZKLOCK_MODE_WRITE
                                          : ZKLOCK_MODE_READ;
        ws[i].lock = new_lock(clients[i % sessions], p, mode);
        if (pthread_create(&th[i], &attr, run_worker, &ws[i]) != 0) {
            fprintf(stderr, "bench_c: thread\n");
            exit(1);
        }
    }
    double start = now_us();
    s.from = start + num("warmup_ms", 500) * 1e3;
    s.end = start + num("duration_ms", 3000) * 1e3;
    pthread_barrier_wait(&s.barrier);
    /* The process's CPU time in the window, said to the runner. */
    double wait = s.from - now_us();
    if (wait > 0) {
        struct timespec d = {(time_t)(wait / 1e6), (long)(wait - (long)(wait / 1e6) * 1e6) * 1000};
        nanosleep(&d, NULL);
    }
    event("measuring");
    double cpu0 = cpu_s();
    wait = s.end - now_us();
    if (wait > 0) {
        struct timespec d = {(time_t)(wait / 1e6), (long)(wait - (long)(wait / 1e6) * 1e6) * 1000};
        nanosleep(&d, NULL);
    }
    double cpu = cpu_s() - cpu0;
    event("measured");
    long total = 0, reads = 0, writes = 0;
    for (int i = 0; i < waiters; i++) {
        pthread_join(th[i], NULL);
        total += ws[i].grants;
        if (ws[i].writer == 1)
            writes += ws[i].grants;
        else
            reads += ws[i].grants;
        zklock_lock_free(ws[i].lock);
    }
    printf("{\"result\":{\"grants\":%ld,\"violations\":%ld,\"window_s\":%.6f,\"cpu_s\":%.6f", total,
           (long)atomic_load(&s.violations), (s.end - s.from) / 1e6, cpu);
    if (kind == 2) printf(",\"read_grants\":%ld,\"write_grants\":%ld", reads, writes);
    printf(",\"per_worker\":[");
    for (int i = 0; i < waiters; i++) printf("%s%ld", i ? "," : "", ws[i].grants);
    printf("]}}\n");
    for (int i = 0; i < sessions; i++) zklock_client_free(clients[i]);
    free(clients);
    free(ws);
    free(inside);
    free(th);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: bench_c SCENARIO HOSTS PATH [key=value ...]\n");
        return 2;
    }
    nparams = argc - 4;
    params = argv + 4;
    const char *sc = argv[1];
    if (strcmp(sc, "uncontended") == 0)
        uncontended(argv[2], argv[3]);
    else if (strcmp(sc, "drain") == 0)
        drain(argv[2], argv[3]);
    else if (strcmp(sc, "contended") == 0 || strcmp(sc, "queue") == 0)
        workers(argv[2], argv[3], 0);
    else if (strcmp(sc, "independent") == 0)
        workers(argv[2], argv[3], 1);
    else if (strcmp(sc, "rw") == 0)
        workers(argv[2], argv[3], 2);
    else {
        fprintf(stderr, "bench_c: unknown scenario %s\n", sc);
        return 2;
    }
    fflush(stdout);
    return 0;
}
