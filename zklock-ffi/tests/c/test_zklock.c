/*
 * C tests of libzklock against a real ZooKeeper.
 *
 * Run through with-zk.sh, which starts the server (zkharness) and passes
 * ZKLOCK_TEST_CONNECT, ZKLOCK_TEST_PROXIED_CONNECT, ZKLOCK_TEST_HARNESS_IN
 * and ZKLOCK_TEST_HARNESS_OUT in the environment:
 *
 *     with-zk.sh --proxy ./test_zklock [TEST...]
 *
 * Without arguments every test runs. The last line is
 * "c: N passed, M failed"; the exit status is 0 only if nothing failed.
 * `test_zklock --worker PATH LOG ITERATIONS ID` is the child process of the
 * multi-process test (it is started from this same binary).
 */
#define _GNU_SOURCE
#include <zklock.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ------------------------------------------------------------------ */
/* A tiny test framework                                               */

static char g_fail_msg[8192];

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(g_fail_msg, sizeof g_fail_msg, __VA_ARGS__);                                      \
        fprintf(stderr, "  %s:%d: %s\n", __FILE__, __LINE__, g_fail_msg);                          \
        return 1;                                                                                  \
    } while (0)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) FAIL("CHECK failed: %s", #cond);                                              \
    } while (0)

/* Checks that `expr` returns `want`; prints the error message otherwise. */
#define CHECK_RC(expr, want)                                                                       \
    do {                                                                                           \
        zklock_code got_ = (expr);                                                                 \
        if (got_ != (want))                                                                        \
            FAIL("%s returned %s, expected %s", #expr, zklock_code_name(got_),                     \
                 zklock_code_name(want));                                                          \
    } while (0)

/* Calls `call` (which must end in `, &err)`), expecting code `want`; the
 * error object must be set on failure (and its code must match), and must
 * not be set on success. `err` is freed. */
#define EXPECT(want, call)                                                                         \
    do {                                                                                           \
        zklock_error *err = NULL;                                                                  \
        zklock_code got_ = call;                                                                   \
        if (got_ != (want)) {                                                                      \
            FAIL("%s returned %s (%s), expected %s", #call, zklock_code_name(got_),                \
                 err ? zklock_error_message(err) : "no error object", zklock_code_name(want));     \
        }                                                                                          \
        if ((want) == ZKLOCK_OK && err != NULL)                                                    \
            FAIL("%s succeeded but set an error object", #call);                                   \
        if ((want) != ZKLOCK_OK) {                                                                 \
            if (err == NULL) FAIL("%s: no error object", #call);                                   \
            if (zklock_error_code(err) != (want))                                                  \
                FAIL("%s: error object has code %s", #call,                                        \
                     zklock_code_name(zklock_error_code(err)));                                    \
            if (strlen(zklock_error_message(err)) == 0) FAIL("%s: empty error message", #call);    \
        }                                                                                          \
        zklock_error_free(err);                                                                    \
    } while (0)

/* Like EXPECT, and the message must contain `needle`. */
#define EXPECT_MSG(want, needle, call)                                                             \
    do {                                                                                           \
        zklock_error *err = NULL;                                                                  \
        zklock_code got_ = call;                                                                   \
        if (got_ != (want) || err == NULL) {                                                       \
            FAIL("%s returned %s (%s), expected %s", #call, zklock_code_name(got_),                \
                 err ? zklock_error_message(err) : "no error object", zklock_code_name(want));     \
        }                                                                                          \
        if (strstr(zklock_error_message(err), (needle)) == NULL) {                                 \
            char m_[512];                                                                          \
            snprintf(m_, sizeof m_, "%s", zklock_error_message(err));                              \
            zklock_error_free(err);                                                                \
            FAIL("%s: message \"%s\" does not mention \"%s\"", #call, m_, needle);                 \
        }                                                                                          \
        zklock_error_free(err);                                                                    \
    } while (0)

static const char *connect_string(void) {
    const char *c = getenv("ZKLOCK_TEST_CONNECT");
    return c ? c : "127.0.0.1:2181";
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

/* A unique lock path for one test. */
static void lock_path(char *buf, size_t len, const char *name) {
    snprintf(buf, len, "/zklock-c-tests/%s-%d", name, (int)getpid());
}

/* Connects to the direct connect string with default options. */
static int connect_default(zklock_client **out) {
    EXPECT(ZKLOCK_OK, zklock_client_new(connect_string(), NULL, out, &err));
    return 0;
}

/* The number of participants of `path` (-1 on error). */
static long participant_count(const zklock_client *zk, const char *path) {
    zklock_participants *p = NULL;
    if (zklock_client_participants(zk, path, &p, NULL) != ZKLOCK_OK) return -1;
    long n = (long)zklock_participants_len(p);
    zklock_participants_free(p);
    return n;
}

/* Waits up to `ms` for `path` to have `want` participants. */
static int wait_participants(const zklock_client *zk, const char *path, long want, long ms) {
    double end = now_s() + (double)ms / 1000.0;
    long n = -1;
    do {
        n = participant_count(zk, path);
        if (n == want) return 0;
        sleep_ms(50);
    } while (now_s() < end);
    FAIL("%s has %ld participants, expected %ld", path, n, want);
}

/* ------------------------------------------------------------------ */
/* Harness commands (blackhole, heal, ...) through with-zk.sh's FIFO    */

static int count_lines(const char *file) {
    FILE *f = fopen(file, "r");
    if (!f) return -1;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF)
        if (c == '\n') n++;
    fclose(f);
    return n;
}

/* Sends one command to the harness and waits for its answer ("ok":true). */
static int harness(const char *cmd) {
    const char *in = getenv("ZKLOCK_TEST_HARNESS_IN");
    const char *out = getenv("ZKLOCK_TEST_HARNESS_OUT");
    if (!in || !out) FAIL("not run through with-zk.sh (no harness FIFO)");
    int before = count_lines(out);
    int fd = open(in, O_WRONLY | O_APPEND);
    if (fd < 0) FAIL("open %s: %s", in, strerror(errno));
    char line[256];
    int n = snprintf(line, sizeof line, "%s\n", cmd);
    ssize_t w = write(fd, line, (size_t)n);
    close(fd);
    if (w != n) FAIL("write to the harness failed");
    double end = now_s() + 60;
    while (count_lines(out) <= before) {
        if (now_s() > end) FAIL("no answer from the harness to %s", cmd);
        sleep_ms(20);
    }
    FILE *f = fopen(out, "r");
    if (!f) FAIL("open %s", out);
    char buf[4096], last[4096] = "";
    while (fgets(buf, sizeof buf, f)) memcpy(last, buf, sizeof last);
    fclose(f);
    if (!strstr(last, "\"ok\":true")) FAIL("harness %s: %.200s", cmd, last);
    return 0;
}

/* ------------------------------------------------------------------ */
/* State-change callback recorder                                      */

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int states[64];
    int n;
    pthread_t thread;
    int calls_on_caller_thread;
} recorder;

static void recorder_init(recorder *r) {
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
}

static void recorder_destroy(recorder *r) {
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
}

static pthread_t g_main_thread;

static void record_state(void *userdata, zklock_state state) {
    recorder *r = (recorder *)userdata;
    pthread_mutex_lock(&r->mu);
    if (r->n < 64) r->states[r->n++] = (int)state;
    if (pthread_equal(pthread_self(), g_main_thread)) r->calls_on_caller_thread++;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* A connection listener: records the client's connection states. */
static void record_connection(void *userdata, zklock_connection_state state) {
    record_state(userdata, (zklock_state)state);
}

/* Waits up to `ms` for the recorder to have seen `state`. */
static int recorder_wait(recorder *r, zklock_state state, long ms) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += ms / 1000;
    deadline.tv_nsec += (ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&r->mu);
    for (;;) {
        for (int i = 0; i < r->n; i++) {
            if (r->states[i] == (int)state) {
                pthread_mutex_unlock(&r->mu);
                return 0;
            }
        }
        if (pthread_cond_timedwait(&r->cv, &r->mu, &deadline) == ETIMEDOUT) break;
    }
    pthread_mutex_unlock(&r->mu);
    return -1;
}

/* ------------------------------------------------------------------ */
/* Mutual exclusion log: "enter ID TOKEN" / "exit ID" lines, O_APPEND   */

static int append_line(const char *log, const char *line) {
    int fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0600);
    if (fd < 0) return -1;
    size_t n = strlen(line);
    ssize_t w = write(fd, line, n);
    close(fd);
    return w == (ssize_t)n ? 0 : -1;
}

/* One critical section: enter, a short pause, exit. */
static int critical_section(const zklock_guard *g, const char *log, int id) {
    char line[128];
    if (zklock_guard_check(g, NULL) != ZKLOCK_OK) return -1;
    snprintf(line, sizeof line, "enter %d %" PRIu64 "\n", id, zklock_guard_fencing_token(g));
    if (append_line(log, line) != 0) return -1;
    sleep_ms(3);
    snprintf(line, sizeof line, "exit %d\n", id);
    return append_line(log, line);
}

/* Checks that the log has `sections` non-interleaved sections with strictly
 * growing fencing tokens. */
static int check_log(const char *log, int sections) {
    FILE *f = fopen(log, "r");
    if (!f) FAIL("open %s: %s", log, strerror(errno));
    char line[256];
    int inside = -1, count = 0, lineno = 0;
    uint64_t last_token = 0;
    while (fgets(line, sizeof line, f)) {
        int id;
        uint64_t token;
        lineno++;
        if (sscanf(line, "enter %d %" SCNu64, &id, &token) == 2) {
            if (inside != -1) {
                fclose(f);
                FAIL("line %d: %d entered while %d was inside", lineno, id, inside);
            }
            if (token <= last_token) {
                fclose(f);
                FAIL("line %d: token %" PRIu64 " not above %" PRIu64, lineno, token, last_token);
            }
            inside = id;
            last_token = token;
        } else if (sscanf(line, "exit %d", &id) == 1) {
            if (inside != id) {
                fclose(f);
                FAIL("line %d: %d left but %d was inside", lineno, id, inside);
            }
            inside = -1;
            count++;
        } else {
            fclose(f);
            FAIL("line %d: garbage: %s", lineno, line);
        }
    }
    fclose(f);
    if (inside != -1) FAIL("%d never left", inside);
    if (count != sections) FAIL("%d sections, expected %d", count, sections);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Tests                                                               */

static int test_version_and_code_names(void) {
    CHECK(strcmp(zklock_version(), "0.1.0") == 0);
    CHECK(strcmp(zklock_code_name(ZKLOCK_OK), "OK") == 0);
    CHECK(strcmp(zklock_code_name(ZKLOCK_INVALID_ARGUMENT), "INVALID_ARGUMENT") == 0);
    CHECK(strcmp(zklock_code_name(ZKLOCK_TIMEOUT), "TIMEOUT") == 0);
    CHECK(strcmp(zklock_code_name(ZKLOCK_NOT_HELD), "NOT_HELD") == 0);
    CHECK(strcmp(zklock_code_name(ZKLOCK_WOULD_DEADLOCK), "WOULD_DEADLOCK") == 0);
    CHECK(strcmp(zklock_code_name(ZKLOCK_NO_AUTH), "NO_AUTH") == 0);
    /* The header's version macros name the library's version. */
    char header_version[32];
    snprintf(header_version, sizeof header_version, "%d.%d.%d", ZKLOCK_VERSION_MAJOR,
             ZKLOCK_VERSION_MINOR, ZKLOCK_VERSION_PATCH);
    CHECK(strcmp(header_version, zklock_version()) == 0);
    CHECK(strcmp(zklock_code_name((zklock_code)99), "UNKNOWN") == 0);
    CHECK(strcmp(zklock_code_name((zklock_code)-1), "UNKNOWN") == 0);
    return 0;
}

static int test_lifecycle(void) {
    char path[128];
    lock_path(path, sizeof path, "lifecycle");
    zklock_client *zk = NULL;
    zklock_client_options opts;
    zklock_client_options_init(&opts, sizeof opts);
    opts.session_timeout_ms = 6000;
    EXPECT(ZKLOCK_OK, zklock_client_new(connect_string(), &opts, &zk, &err));
    CHECK(zk != NULL);

    int64_t sid = 0;
    EXPECT(ZKLOCK_OK, zklock_client_session_id(zk, &sid, &err));
    CHECK(sid != 0);

    zklock_lock *lock = NULL;
    EXPECT(ZKLOCK_OK, zklock_lock_new_reentrant(zk, path, ZKLOCK_MODE_EXCLUSIVE, &lock, &err));
    CHECK(!zklock_lock_is_held(lock));

    zklock_guard *g = NULL;
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(lock, 10000, &g, &err));
    CHECK(g != NULL);
    CHECK(zklock_lock_is_held(lock));
    CHECK(zklock_guard_state(g) == ZKLOCK_STATE_HELD);
    EXPECT(ZKLOCK_OK, zklock_guard_check(g, &err));
    CHECK(zklock_guard_fencing_token(g) > 0);
    CHECK(zklock_guard_sequence(g) >= 0);
    CHECK(zklock_guard_session_id(g) == sid);

    /* node path, snprintf style */
    size_t need = zklock_guard_node_path(g, NULL, 0);
    CHECK(need > strlen(path) + 1);
    char full[512];
    CHECK(zklock_guard_node_path(g, full, sizeof full) == need);
    CHECK(strlen(full) == need);
    CHECK(strncmp(full, path, strlen(path)) == 0);
    CHECK(strstr(full, "/_c_") != NULL && strstr(full, "-lock-") != NULL);
    char small[8];
    memset(small, 'x', sizeof small);
    CHECK(zklock_guard_node_path(g, small, sizeof small) == need);
    CHECK(small[7] == '\0' && strncmp(small, full, 7) == 0);
    char one = 'x';
    CHECK(zklock_guard_node_path(g, &one, 1) == need && one == '\0');

    /* the queue shows us as the holder */
    zklock_participants *p = NULL;
    EXPECT(ZKLOCK_OK, zklock_client_participants(zk, path, &p, &err));
    CHECK(zklock_participants_len(p) == 1);
    CHECK(zklock_participants_holds(p, 0));
    CHECK(!zklock_participants_is_reader(p, 0));
    CHECK(zklock_participants_session_id(p, 0) == sid);
    CHECK(zklock_participants_sequence(p, 0) == zklock_guard_sequence(g));
    CHECK(strstr(full, zklock_participants_name(p, 0)) != NULL);
    size_t dlen = 99;
    CHECK(zklock_participants_data(p, 0, &dlen) != NULL && dlen == 0);
    CHECK(zklock_participants_name(p, 1) == NULL);
    CHECK(zklock_participants_data(p, 1, &dlen) == NULL && dlen == 0);
    zklock_participants_free(p);

    /* a handle from zklock_lock_new: a second acquire is a contender, even
     * from the holding thread */
    zklock_lock *plain = NULL;
    zklock_guard *pg = NULL, *pg2 = NULL;
    char path2[160];
    snprintf(path2, sizeof path2, "%s-plain", path);
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk, path2, ZKLOCK_MODE_EXCLUSIVE, &plain, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(plain, 5000, &pg, &err));
    EXPECT(ZKLOCK_TIMEOUT, zklock_lock_acquire(plain, 0, &pg2, &err));
    CHECK(pg2 == NULL);
    zklock_guard_free(pg);
    zklock_lock_free(plain);

    /* reentrant per thread (zklock_lock_new_reentrant): the same node */
    zklock_guard *g2 = NULL;
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(lock, 0, &g2, &err));
    CHECK(zklock_guard_sequence(g2) == zklock_guard_sequence(g));
    bool pending = true;
    EXPECT(ZKLOCK_OK, zklock_guard_release(g2, &pending, &err));
    CHECK(!pending);
    /* the released guard says so while the other keeps the lock */
    CHECK(zklock_guard_state(g2) == ZKLOCK_STATE_RELEASED);
    EXPECT(ZKLOCK_NOT_HELD, zklock_guard_check(g2, &err));
    zklock_guard_free(g2);
    CHECK(zklock_guard_state(g) == ZKLOCK_STATE_HELD);
    EXPECT(ZKLOCK_OK, zklock_guard_check(g, &err));

    pending = true;
    EXPECT(ZKLOCK_OK, zklock_guard_release(g, &pending, &err));
    CHECK(!pending);
    CHECK(zklock_guard_state(g) == ZKLOCK_STATE_RELEASED);
    EXPECT(ZKLOCK_NOT_HELD, zklock_guard_check(g, &err));
    EXPECT(ZKLOCK_NOT_HELD, zklock_guard_release(g, NULL, &err));
    CHECK(!zklock_lock_is_held(lock));
    CHECK(participant_count(zk, path) == 0);
    zklock_guard_free(g);

    /* err == NULL is allowed everywhere */
    CHECK_RC(zklock_lock_acquire(lock, 5000, &g, NULL), ZKLOCK_OK);
    CHECK_RC(zklock_guard_release(g, NULL, NULL), ZKLOCK_OK);
    CHECK_RC(zklock_guard_release(g, NULL, NULL), ZKLOCK_NOT_HELD);
    zklock_guard_free(g);

    /* a guard freed while held releases the lock */
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(lock, 5000, &g, &err));
    zklock_guard_free(g);
    CHECK(participant_count(zk, path) == 0);

    /* locks and guards keep the client alive: free the client first */
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(lock, 5000, &g, &err));
    zklock_client_free(zk);
    EXPECT(ZKLOCK_OK, zklock_guard_check(g, &err));
    zklock_guard_free(g);
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(lock, 5000, &g, &err));
    zklock_lock_free(lock); /* the guard outlives its lock too */
    EXPECT(ZKLOCK_OK, zklock_guard_check(g, &err));
    EXPECT(ZKLOCK_OK, zklock_guard_release(g, NULL, &err));
    zklock_guard_free(g);
    return 0;
}

static int test_close(void) {
    char path[128];
    lock_path(path, sizeof path, "close");
    zklock_client *zk = NULL, *other = NULL;
    if (connect_default(&zk) || connect_default(&other)) return 1;
    zklock_lock *lock = NULL;
    zklock_guard *g = NULL;
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk, path, ZKLOCK_MODE_EXCLUSIVE, &lock, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(lock, 5000, &g, &err));
    recorder rec;
    recorder_init(&rec);
    EXPECT(ZKLOCK_OK, zklock_guard_on_state_change(g, record_state, &rec, NULL, &err));
    /* A second callback, taken back by freeing its subscription: never
     * called. */
    recorder dropped;
    recorder_init(&dropped);
    zklock_subscription *sub = NULL;
    EXPECT(ZKLOCK_OK, zklock_guard_on_state_change(g, record_state, &dropped, &sub, &err));
    CHECK(sub != NULL);
    zklock_subscription_free(sub);

    EXPECT(ZKLOCK_OK, zklock_client_close(zk, &err));
    EXPECT(ZKLOCK_OK, zklock_client_close(zk, &err)); /* idempotent */
    CHECK(recorder_wait(&rec, ZKLOCK_STATE_LOST, 10000) == 0);
    sleep_ms(100);
    pthread_mutex_lock(&dropped.mu);
    int dropped_calls = dropped.n;
    pthread_mutex_unlock(&dropped.mu);
    CHECK(dropped_calls == 0);
    recorder_destroy(&dropped);
    EXPECT(ZKLOCK_CLOSED, zklock_guard_check(g, &err));
    CHECK(zklock_guard_release(g, NULL, NULL) != ZKLOCK_OK);
    zklock_lock *l2 = NULL;
    EXPECT(ZKLOCK_CLOSED, zklock_lock_new(zk, path, ZKLOCK_MODE_EXCLUSIVE, &l2, &err));
    CHECK(l2 == NULL);
    zklock_guard *g2 = NULL;
    EXPECT(ZKLOCK_CLOSED, zklock_lock_acquire(lock, 1000, &g2, &err));
    CHECK(g2 == NULL);
    int64_t sid = 0;
    EXPECT(ZKLOCK_CLOSED, zklock_client_session_id(zk, &sid, &err));
    CHECK(sid == 0);
    /* the node went with the session */
    CHECK(wait_participants(other, path, 0, 10000) == 0);
    zklock_guard_free(g);
    zklock_lock_free(lock);
    zklock_client_free(zk);
    zklock_client_free(other);
    CHECK(rec.calls_on_caller_thread == 0);
    recorder_destroy(&rec);
    return 0;
}

static int test_timeout_leaves_no_node(void) {
    char path[128];
    lock_path(path, sizeof path, "timeout");
    zklock_client *zk = NULL, *zk2 = NULL;
    if (connect_default(&zk) || connect_default(&zk2)) return 1;
    zklock_lock *holder = NULL, *waiter = NULL;
    zklock_guard *g = NULL, *g2 = NULL;
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk, path, ZKLOCK_MODE_EXCLUSIVE, &holder, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk2, path, ZKLOCK_MODE_EXCLUSIVE, &waiter, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(holder, 5000, &g, &err));

    double t0 = now_s();
    EXPECT(ZKLOCK_TIMEOUT, zklock_lock_acquire(waiter, 400, &g2, &err));
    double waited = now_s() - t0;
    CHECK(g2 == NULL);
    CHECK(waited >= 0.35);
    CHECK(participant_count(zk, path) == 1);

    /* timeout_ms == 0: try once */
    EXPECT(ZKLOCK_TIMEOUT, zklock_lock_acquire(waiter, 0, &g2, &err));
    CHECK(g2 == NULL);
    CHECK(participant_count(zk, path) == 1);
    /* without an error object, the code alone */
    CHECK_RC(zklock_lock_acquire(waiter, 0, &g2, NULL), ZKLOCK_TIMEOUT);
    CHECK(participant_count(zk, path) == 1);

    EXPECT(ZKLOCK_OK, zklock_guard_release(g, NULL, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(waiter, 0, &g2, &err));
    CHECK(zklock_guard_fencing_token(g2) > zklock_guard_fencing_token(g));
    zklock_guard_free(g2);
    zklock_guard_free(g);
    zklock_lock_free(waiter);
    zklock_lock_free(holder);
    zklock_client_free(zk2);
    zklock_client_free(zk);
    return 0;
}

/* The data of the participant of `path` that holds (leads) into `buf`;
 * 0 when found. */
static int leader_id(const zklock_client *zk, const char *path, char *buf, size_t len) {
    zklock_participants *p = NULL;
    if (zklock_client_participants(zk, path, &p, NULL) != ZKLOCK_OK) return -1;
    int rc = -1;
    for (size_t i = 0; i < zklock_participants_len(p); i++) {
        if (!zklock_participants_holds(p, i)) continue;
        size_t n = 0;
        const uint8_t *data = zklock_participants_data(p, i, &n);
        if (n < len) {
            memcpy(buf, data, n);
            buf[n] = '\0';
            rc = 0;
        }
        break;
    }
    zklock_participants_free(p);
    return rc;
}

/* Leader election: the first participant leads (its id is its node's
 * data); a second waits; resigning hands over; bad ids are refused. */
static int test_election(void) {
    char path[128], id[64];
    lock_path(path, sizeof path, "election");
    zklock_client *zk = NULL, *zk2 = NULL;
    if (connect_default(&zk) || connect_default(&zk2)) return 1;
    zklock_lock *a = NULL, *b = NULL, *bad = NULL;
    zklock_guard *ga = NULL, *gb = NULL;
    EXPECT(ZKLOCK_OK, zklock_election_new(zk, path, "node-a", &a, &err));
    EXPECT(ZKLOCK_OK, zklock_election_new(zk2, path, "node-b", &b, &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_election_new(zk, path, NULL, &bad, &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_election_new(zk, path, "__REVOKE__", &bad, &err));
    EXPECT(ZKLOCK_INVALID_PATH, zklock_election_new(zk, "relative", "x", &bad, &err));
    CHECK(bad == NULL);
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(a, 5000, &ga, &err));
    CHECK(leader_id(zk2, path, id, sizeof id) == 0 && strcmp(id, "node-a") == 0);
    EXPECT(ZKLOCK_TIMEOUT, zklock_lock_acquire(b, 300, &gb, &err));
    CHECK(participant_count(zk, path) == 1);
    EXPECT(ZKLOCK_OK, zklock_guard_release(ga, NULL, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(b, 5000, &gb, &err));
    CHECK(leader_id(zk, path, id, sizeof id) == 0 && strcmp(id, "node-b") == 0);
    CHECK(zklock_guard_fencing_token(gb) > zklock_guard_fencing_token(ga));
    EXPECT(ZKLOCK_OK, zklock_guard_release(gb, NULL, &err));
    CHECK(participant_count(zk, path) == 0);
    zklock_guard_free(gb);
    zklock_guard_free(ga);
    zklock_lock_free(b);
    zklock_lock_free(a);
    zklock_client_free(zk2);
    zklock_client_free(zk);
    return 0;
}

/* Semaphores: two leases held at once, a third waits (timeout), a
 * returned lease goes to the waiter; lease nodes under <path>/leases;
 * bad permits refused at once. */
static int test_semaphore(void) {
    char path[128], leases[160], node[256];
    lock_path(path, sizeof path, "semaphore");
    snprintf(leases, sizeof leases, "%s/leases/", path);
    zklock_client *zk = NULL, *zk2 = NULL;
    if (connect_default(&zk) || connect_default(&zk2)) return 1;
    zklock_lock *a = NULL, *b = NULL, *bad = NULL;
    zklock_guard *g1 = NULL, *g2 = NULL, *g3 = NULL;
    EXPECT(ZKLOCK_OK, zklock_semaphore_new(zk, path, 2, "host-a", &a, &err));
    EXPECT(ZKLOCK_OK, zklock_semaphore_new(zk2, path, 2, NULL, &b, &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_semaphore_new(zk, path, 0, NULL, &bad, &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_semaphore_new(zk, path, 2147483648u, NULL, &bad, &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_semaphore_new(zk, path, 2, "__REVOKE__", &bad, &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_semaphore_new(NULL, path, 2, NULL, &bad, &err));
    EXPECT(ZKLOCK_INVALID_PATH, zklock_semaphore_new(zk, "relative", 2, NULL, &bad, &err));
    CHECK(bad == NULL);
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(a, 5000, &g1, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(a, 5000, &g2, &err));
    CHECK(zklock_guard_node_path(g1, node, sizeof node) > 0);
    CHECK(strncmp(node, leases, strlen(leases)) == 0 && strstr(node, "-lease-") != NULL);
    EXPECT(ZKLOCK_TIMEOUT, zklock_lock_acquire(b, 300, &g3, &err));
    CHECK(g3 == NULL);
    EXPECT(ZKLOCK_OK, zklock_guard_release(g1, NULL, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(b, 5000, &g3, &err));
    EXPECT(ZKLOCK_OK, zklock_guard_check(g3, &err));
    CHECK(zklock_guard_fencing_token(g3) > zklock_guard_fencing_token(g2));
    EXPECT(ZKLOCK_OK, zklock_guard_release(g2, NULL, &err));
    EXPECT(ZKLOCK_OK, zklock_guard_release(g3, NULL, &err));
    snprintf(leases, sizeof leases, "%s/leases", path);
    CHECK(participant_count(zk, leases) == 0);
    zklock_guard_free(g3);
    zklock_guard_free(g2);
    zklock_guard_free(g1);
    zklock_lock_free(b);
    zklock_lock_free(a);
    zklock_client_free(zk2);
    zklock_client_free(zk);
    return 0;
}

/* What the test logger saw: the INFO records of connects, the last one. */
typedef struct {
    pthread_mutex_t mu;
    int connects;
    char last[256];
} log_seen;

static void collect_log(void *userdata, zklock_log_level level, const char *message) {
    log_seen *seen = userdata;
    pthread_mutex_lock(&seen->mu);
    if (level == ZKLOCK_LOG_INFO && strstr(message, "connected to") != NULL) {
        seen->connects++;
        snprintf(seen->last, sizeof seen->last, "%s", message);
    }
    pthread_mutex_unlock(&seen->mu);
}

/* zklock_set_logger: a connect is told at INFO with its session id; a bad
 * level is refused; NULL goes back to stderr. */
static int test_logger(void) {
    log_seen seen = {.connects = 0, .last = ""};
    pthread_mutex_init(&seen.mu, NULL);
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_set_logger(collect_log, &seen, 9, &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_set_logger(collect_log, &seen, -1, &err));
    EXPECT(ZKLOCK_OK, zklock_set_logger(collect_log, &seen, ZKLOCK_LOG_INFO, &err));
    zklock_client *zk = NULL;
    if (connect_default(&zk)) return 1;
    int64_t session = 0;
    EXPECT(ZKLOCK_OK, zklock_client_session_id(zk, &session, &err));
    char wanted[64];
    snprintf(wanted, sizeof wanted, "session %#" PRIx64 ",", (uint64_t)session);
    int found = 0;
    for (int i = 0; i < 250 && !found; i++) {
        pthread_mutex_lock(&seen.mu);
        found = seen.connects == 1 && strstr(seen.last, wanted) != NULL;
        pthread_mutex_unlock(&seen.mu);
        if (!found) sleep_ms(20);
    }
    zklock_client_free(zk);
    /* Back to stderr: the logger (and `seen`) are not used any more. */
    EXPECT(ZKLOCK_OK, zklock_set_logger(NULL, NULL, ZKLOCK_LOG_WARN, &err));
    CHECK(found);
    pthread_mutex_destroy(&seen.mu);
    return 0;
}

/* Multi-locks: all or none under one deadline; the guard covers every
 * member; bad members refused at once. */
static int test_multi_lock(void) {
    char a[128], b[128];
    lock_path(a, sizeof a, "multi-a");
    lock_path(b, sizeof b, "multi-b");
    zklock_client *zk = NULL, *zk2 = NULL;
    if (connect_default(&zk) || connect_default(&zk2)) return 1;
    zklock_lock *other = NULL;
    zklock_guard *held = NULL;
    zklock_multi *multi = NULL, *bad = NULL;
    zklock_multi_guard *mg = NULL;
    const char *paths[] = {b, a};
    const zklock_mode modes[] = {ZKLOCK_MODE_WRITE, ZKLOCK_MODE_EXCLUSIVE};
    EXPECT(ZKLOCK_OK, zklock_multi_new(zk, paths, modes, 2, &multi, &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_multi_new(zk, paths, modes, 0, &bad, &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_multi_new(zk, NULL, modes, 2, &bad, &err));
    const char *twice[] = {a, a};
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_multi_new(zk, twice, NULL, 2, &bad, &err));
    const zklock_mode wrong[] = {ZKLOCK_MODE_READ, 42};
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_multi_new(zk, paths, wrong, 2, &bad, &err));
    const char *relative[] = {a, "relative"};
    EXPECT(ZKLOCK_INVALID_PATH, zklock_multi_new(zk, relative, NULL, 2, &bad, &err));
    CHECK(bad == NULL);

    /* b is held elsewhere: nothing is taken. */
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk2, b, ZKLOCK_MODE_EXCLUSIVE, &other, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(other, 5000, &held, &err));
    EXPECT(ZKLOCK_TIMEOUT, zklock_multi_acquire(multi, 300, NULL, &mg, &err));
    CHECK(mg == NULL);
    CHECK(participant_count(zk, a) == 0);
    EXPECT(ZKLOCK_OK, zklock_guard_release(held, NULL, &err));

    EXPECT(ZKLOCK_OK, zklock_multi_acquire(multi, 5000, NULL, &mg, &err));
    CHECK(zklock_multi_guard_len(mg) == 2);
    CHECK(zklock_multi_guard_fencing_token(mg, 0) > 0 &&
          zklock_multi_guard_fencing_token(mg, 1) > 0);
    CHECK(zklock_multi_guard_fencing_token(mg, 2) == 0);
    CHECK(zklock_multi_guard_state(mg) == ZKLOCK_STATE_HELD);
    EXPECT(ZKLOCK_OK, zklock_multi_guard_check(mg, &err));
    CHECK(participant_count(zk, a) == 1 && participant_count(zk, b) == 1);
    bool pending = true;
    EXPECT(ZKLOCK_OK, zklock_multi_guard_release(mg, &pending, &err));
    CHECK(!pending);
    CHECK(zklock_multi_guard_state(mg) == ZKLOCK_STATE_RELEASED);
    EXPECT(ZKLOCK_NOT_HELD, zklock_multi_guard_check(mg, &err));
    CHECK(participant_count(zk, a) == 0 && participant_count(zk, b) == 0);
    CHECK(zklock_multi_guard_state(NULL) == ZKLOCK_STATE_RELEASED &&
          zklock_multi_guard_len(NULL) == 0);
    zklock_multi_guard_free(mg);
    zklock_multi_guard_free(NULL);
    zklock_multi_free(multi);
    zklock_multi_free(NULL);
    zklock_guard_free(held);
    zklock_lock_free(other);
    zklock_client_free(zk2);
    zklock_client_free(zk);
    return 0;
}

struct acquire_job {
    zklock_lock *lock;
    int64_t timeout_ms;
    zklock_code rc;
    zklock_guard *guard;
    double seconds;
    zklock_cancel *cancel; /* NULL: zklock_lock_acquire */
};

static void *acquire_thread(void *arg) {
    struct acquire_job *job = (struct acquire_job *)arg;
    double t0 = now_s();
    if (job->cancel)
        job->rc = zklock_lock_acquire_cancellable(job->lock, job->timeout_ms, job->cancel,
                                                  &job->guard, NULL);
    else
        job->rc = zklock_lock_acquire(job->lock, job->timeout_ms, &job->guard, NULL);
    job->seconds = now_s() - t0;
    return NULL;
}

/* Two threads block in acquires of one handle, each with its own token:
 * cancelling one ends that call only. */
static int test_cancel_one_blocking_call(void) {
    char path[128];
    lock_path(path, sizeof path, "cancel-one");
    zklock_client *zk = NULL;
    if (connect_default(&zk)) return 1;
    zklock_lock *holder = NULL, *waiter = NULL;
    zklock_guard *g = NULL;
    zklock_cancel *c1 = NULL, *c2 = NULL;
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk, path, ZKLOCK_MODE_EXCLUSIVE, &holder, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk, path, ZKLOCK_MODE_EXCLUSIVE, &waiter, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(holder, 5000, &g, &err));
    EXPECT(ZKLOCK_OK, zklock_cancel_new(&c1, &err));
    EXPECT(ZKLOCK_OK, zklock_cancel_new(&c2, &err));

    /* A token cancelled before the call: ZKLOCK_CANCELLED at once, no node. */
    zklock_cancel *early = NULL;
    zklock_guard *none = NULL;
    EXPECT(ZKLOCK_OK, zklock_cancel_new(&early, &err));
    zklock_cancel_cancel(early);
    EXPECT(ZKLOCK_CANCELLED, zklock_lock_acquire_cancellable(waiter, -1, early, &none, &err));
    CHECK(none == NULL);
    CHECK(participant_count(zk, path) == 1);

    struct acquire_job j1 = {waiter, -1, ZKLOCK_INTERNAL, NULL, 0, c1};
    struct acquire_job j2 = {waiter, 60000, ZKLOCK_INTERNAL, NULL, 0, c2};
    pthread_t t1, t2;
    CHECK(pthread_create(&t1, NULL, acquire_thread, &j1) == 0);
    CHECK(wait_participants(zk, path, 2, 20000) == 0);
    CHECK(pthread_create(&t2, NULL, acquire_thread, &j2) == 0);
    sleep_ms(300);
    zklock_cancel_cancel(c2);
    pthread_join(t2, NULL);
    CHECK(j2.rc == ZKLOCK_CANCELLED && j2.guard == NULL);
    CHECK(j1.rc == ZKLOCK_INTERNAL); /* still waiting */
    EXPECT(ZKLOCK_OK, zklock_guard_release(g, NULL, &err));
    pthread_join(t1, NULL);
    CHECK(j1.rc == ZKLOCK_OK && zklock_guard_state(j1.guard) == ZKLOCK_STATE_HELD);
    zklock_guard_free(j1.guard);
    CHECK(wait_participants(zk, path, 0, 10000) == 0);
    zklock_cancel_free(early);
    zklock_cancel_free(c1);
    zklock_cancel_free(c2);
    zklock_guard_free(g);
    zklock_lock_free(waiter);
    zklock_lock_free(holder);
    zklock_client_free(zk);
    return 0;
}

static int test_cancel_from_another_thread(void) {
    char path[128];
    lock_path(path, sizeof path, "cancel");
    zklock_client *zk = NULL;
    if (connect_default(&zk)) return 1;
    zklock_lock *holder = NULL, *waiter = NULL;
    zklock_guard *g = NULL;
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk, path, ZKLOCK_MODE_EXCLUSIVE, &holder, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk, path, ZKLOCK_MODE_EXCLUSIVE, &waiter, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(holder, 5000, &g, &err));

    struct acquire_job job = {waiter, -1, ZKLOCK_OK, NULL, 0, NULL};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, acquire_thread, &job) == 0);
    CHECK(wait_participants(zk, path, 2, 20000) == 0); /* it is queued */
    zklock_lock_cancel(waiter);
    pthread_join(t, NULL);
    CHECK(job.rc == ZKLOCK_CANCELLED);
    CHECK(job.guard == NULL);
    CHECK(wait_participants(zk, path, 1, 10000) == 0);

    /* a later acquire is not affected by the earlier cancel */
    zklock_lock_cancel(NULL);
    struct acquire_job job2 = {waiter, 20000, ZKLOCK_INTERNAL, NULL, 0, NULL};
    CHECK(pthread_create(&t, NULL, acquire_thread, &job2) == 0);
    CHECK(wait_participants(zk, path, 2, 20000) == 0);
    EXPECT(ZKLOCK_OK, zklock_guard_release(g, NULL, &err)); /* hand it over */
    pthread_join(t, NULL);
    CHECK(job2.rc == ZKLOCK_OK);
    CHECK(zklock_guard_state(job2.guard) == ZKLOCK_STATE_HELD);
    zklock_guard_free(job2.guard);
    zklock_guard_free(g);
    zklock_lock_free(waiter);
    zklock_lock_free(holder);
    zklock_client_free(zk);
    return 0;
}

/* An event loop's view of zklock_lock_acquire_async: each callback appends
 * its outcome and writes the call's id to a pipe, which the test polls like
 * a program's event loop would. */
struct async_outcomes {
    int fd_write;
    pthread_mutex_t mu;
    int n;
    int ids[8];
    zklock_code codes[8];
    zklock_guard *guards[8];
    int errors_set[8];
};

static struct async_outcomes *g_async;
static int ASYNC_IDS[4] = {0, 1, 2, 3};

static void async_done(void *user_data, zklock_code code, zklock_guard *guard, zklock_error *err) {
    /* user_data points into ASYNC_IDS: the call's id. */
    int id = *(const int *)user_data;
    struct async_outcomes *o = g_async;
    pthread_mutex_lock(&o->mu);
    if (o->n < 8) {
        o->ids[o->n] = id;
        o->codes[o->n] = code;
        o->guards[o->n] = guard;
        o->errors_set[o->n] = err != NULL;
        o->n++;
    }
    pthread_mutex_unlock(&o->mu);
    zklock_error_free(err);
    char byte = (char)id;
    ssize_t w = write(o->fd_write, &byte, 1);
    (void)w;
}

/* Waits up to `ms` for one byte on `fd`: the id, or -1 when none came. */
static int poll_id(int fd, long ms) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, (int)ms) <= 0) return -1;
    char byte;
    return read(fd, &byte, 1) == 1 ? byte : -1;
}

static int test_acquire_async_and_per_call_cancel(void) {
    char path[128];
    lock_path(path, sizeof path, "async");
    zklock_client *zk = NULL;
    if (connect_default(&zk)) return 1;
    int fds[2];
    CHECK(pipe(fds) == 0);
    struct async_outcomes o;
    memset(&o, 0, sizeof o);
    o.fd_write = fds[1];
    pthread_mutex_init(&o.mu, NULL);
    g_async = &o;
    zklock_lock *holder = NULL, *waiter = NULL;
    zklock_guard *g = NULL;
    zklock_cancel *t1 = NULL, *t2 = NULL, *early = NULL;
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk, path, ZKLOCK_MODE_EXCLUSIVE, &holder, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk, path, ZKLOCK_MODE_EXCLUSIVE, &waiter, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(holder, 5000, &g, &err));
    EXPECT(ZKLOCK_OK, zklock_cancel_new(&t1, &err));
    EXPECT(ZKLOCK_OK, zklock_cancel_new(&t2, &err));
    EXPECT(ZKLOCK_OK, zklock_cancel_new(&early, &err));

    /* Refused at once, callback never called: NULL callback, a token
     * cancelled before the call. */
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_lock_acquire_async(waiter, -1, NULL, NULL, NULL, &err));
    zklock_cancel_cancel(early);
    EXPECT(ZKLOCK_CANCELLED,
           zklock_lock_acquire_async(waiter, -1, early, async_done, &ASYNC_IDS[0], &err));

    /* Three acquires on one handle, each its own contender: two with their
     * own tokens, one without. */
    EXPECT(ZKLOCK_OK, zklock_lock_acquire_async(waiter, -1, t1, async_done, &ASYNC_IDS[1], &err));
    EXPECT(ZKLOCK_OK,
           zklock_lock_acquire_async(waiter, 60000, t2, async_done, &ASYNC_IDS[2], &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire_async(waiter, -1, NULL, async_done, &ASYNC_IDS[3], &err));
    zklock_cancel_free(t1); /* the call keeps its own reference */
    CHECK(wait_participants(zk, path, 4, 20000) == 0);

    /* Cancelling one call ends that call only. */
    zklock_cancel_cancel(t2);
    CHECK(poll_id(fds[0], 10000) == 2);
    CHECK(o.n == 1 && o.codes[0] == ZKLOCK_CANCELLED && o.guards[0] == NULL && o.errors_set[0]);
    CHECK(poll_id(fds[0], 300) == -1);
    CHECK(wait_participants(zk, path, 3, 10000) == 0);

    /* The lock handle may be freed while its acquires go on. They are
     * granted one after the other. */
    zklock_lock_free(waiter);
    EXPECT(ZKLOCK_OK, zklock_guard_release(g, NULL, &err));
    int a = poll_id(fds[0], 20000);
    CHECK(a == 1 || a == 3);
    CHECK(o.n == 2 && o.codes[1] == ZKLOCK_OK && o.guards[1] != NULL && !o.errors_set[1]);
    CHECK(zklock_guard_state(o.guards[1]) == ZKLOCK_STATE_HELD);
    CHECK(poll_id(fds[0], 300) == -1); /* the other waits behind it */
    zklock_guard_free(o.guards[1]);
    int b = poll_id(fds[0], 20000);
    CHECK(b == 4 - a);
    CHECK(o.n == 3 && o.codes[2] == ZKLOCK_OK && o.guards[2] != NULL && !o.errors_set[2]);
    CHECK(zklock_guard_state(o.guards[2]) == ZKLOCK_STATE_HELD);
    CHECK(poll_id(fds[0], 200) == -1); /* the refused calls never called back */
    zklock_guard_free(o.guards[2]);
    CHECK(wait_participants(zk, path, 0, 10000) == 0);
    zklock_cancel_free(t2);
    zklock_cancel_free(early);
    zklock_guard_free(g);
    zklock_lock_free(holder);
    zklock_client_free(zk);
    close(fds[0]);
    close(fds[1]);
    pthread_mutex_destroy(&o.mu);
    return 0;
}

/* Several threads, each with its own lock handle on one client. */
struct contender {
    zklock_client *zk;
    const char *path;
    const char *log;
    int id;
    int iterations;
    int failed;
};

static void *contender_thread(void *arg) {
    struct contender *c = (struct contender *)arg;
    zklock_lock *lock = NULL;
    if (zklock_lock_new(c->zk, c->path, ZKLOCK_MODE_EXCLUSIVE, &lock, NULL) != ZKLOCK_OK) {
        c->failed = 1;
        return NULL;
    }
    for (int i = 0; i < c->iterations; i++) {
        zklock_guard *g = NULL;
        zklock_error *err = NULL;
        zklock_code rc = zklock_lock_acquire(lock, 120000, &g, &err);
        if (rc != ZKLOCK_OK) {
            fprintf(stderr, "  contender %d: %s: %s\n", c->id, zklock_code_name(rc),
                    zklock_error_message(err));
            zklock_error_free(err);
            c->failed = 1;
            break;
        }
        if (critical_section(g, c->log, c->id) != 0) c->failed = 1;
        if (zklock_guard_release(g, NULL, NULL) != ZKLOCK_OK) c->failed = 1;
        zklock_guard_free(g);
    }
    zklock_lock_free(lock);
    return NULL;
}

/* `--worker PATH LOG ITERATIONS ID`: one contending process. */
static int worker_main(int argc, char **argv) {
    if (argc != 6) return 2;
    zklock_client *zk = NULL;
    zklock_error *err = NULL;
    if (zklock_client_new(connect_string(), NULL, &zk, &err) != ZKLOCK_OK) {
        fprintf(stderr, "worker: %s\n", zklock_error_message(err));
        zklock_error_free(err);
        return 1;
    }
    struct contender c = {zk, argv[2], argv[3], atoi(argv[5]), atoi(argv[4]), 0};
    contender_thread(&c);
    zklock_client_free(zk);
    return c.failed;
}

static const char *g_self;

/* In a child made by fork(): every inherited object fails at once with
 * ZKLOCK_CLOSED and never reports the parent's lock as held; freeing them
 * returns at once and leaves the parent's node alone; a new client works. */
static int fork_child_checks(zklock_client *zk, zklock_lock *lock, zklock_guard *g,
                             const char *path) {
    CHECK(zklock_guard_state(g) == ZKLOCK_STATE_LOST);
    EXPECT_MSG(ZKLOCK_CLOSED, "fork()", zklock_guard_check(g, &err));
    CHECK(!zklock_lock_is_held(lock));
    zklock_participants *p = NULL;
    EXPECT_MSG(ZKLOCK_CLOSED, "fork()", zklock_client_participants(zk, path, &p, &err));
    zklock_guard *g2 = NULL;
    EXPECT(ZKLOCK_CLOSED, zklock_lock_acquire(lock, 1000, &g2, &err));
    int64_t sid = 0;
    EXPECT(ZKLOCK_CLOSED, zklock_client_session_id(zk, &sid, &err));
    CHECK(zklock_guard_release(g, NULL, NULL) == ZKLOCK_CLOSED);
    zklock_guard_free(g);
    zklock_lock_free(lock);
    zklock_client_free(zk);
    /* the child makes its own client, which works */
    zklock_client *own = NULL;
    if (connect_default(&own)) return 1;
    char own_path[160];
    snprintf(own_path, sizeof own_path, "%s-child", path);
    zklock_lock *own_lock = NULL;
    zklock_guard *own_g = NULL;
    EXPECT(ZKLOCK_OK, zklock_lock_new(own, own_path, ZKLOCK_MODE_EXCLUSIVE, &own_lock, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(own_lock, 5000, &own_g, &err));
    EXPECT(ZKLOCK_OK, zklock_guard_check(own_g, &err));
    EXPECT(ZKLOCK_OK, zklock_guard_release(own_g, NULL, &err));
    zklock_guard_free(own_g);
    zklock_lock_free(own_lock);
    zklock_client_free(own);
    return 0;
}

/* `--fork-test`: runs natively (valgrind does not follow it): the child's
 * copies are leaked on purpose (dropping them would touch the parent's
 * sockets), which valgrind would count. */
static int fork_test_main(void) {
    char path[128];
    lock_path(path, sizeof path, "fork");
    zklock_client *zk = NULL;
    if (connect_default(&zk)) return 1;
    zklock_lock *lock = NULL;
    zklock_guard *g = NULL;
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk, path, ZKLOCK_MODE_EXCLUSIVE, &lock, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(lock, 5000, &g, &err));
    fflush(NULL);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        alarm(20); /* a hang is a failure, not a stuck test run */
        _exit(fork_child_checks(zk, lock, g, path));
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* the parent still holds, its node untouched */
    EXPECT(ZKLOCK_OK, zklock_guard_check(g, &err));
    CHECK(participant_count(zk, path) == 1);
    EXPECT(ZKLOCK_OK, zklock_guard_release(g, NULL, &err));
    zklock_guard_free(g);
    zklock_lock_free(lock);
    zklock_client_free(zk);
    return 0;
}

static int test_objects_inherited_through_fork_fail_fast(void) {
    char *const argv[] = {(char *)g_self, "--fork-test", NULL};
    pid_t pid;
    CHECK(posix_spawn(&pid, g_self, NULL, NULL, argv, environ) == 0);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return 0;
}

static int test_mutual_exclusion_threads_and_processes(void) {
    enum { THREADS = 3, PROCS = 2, ITER = 4 };
    char path[128], log[256];
    lock_path(path, sizeof path, "mutex");
    snprintf(log, sizeof log, "%s/zklock-c-mutex-%d.log",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    unlink(log);
    zklock_client *zk = NULL;
    if (connect_default(&zk)) return 1;

    pid_t pids[PROCS];
    char iters[16];
    snprintf(iters, sizeof iters, "%d", ITER);
    for (int i = 0; i < PROCS; i++) {
        char id[16];
        snprintf(id, sizeof id, "%d", 100 + i);
        char *args[] = {(char *)g_self, "--worker", path, log, iters, id, NULL};
        int rc = posix_spawn(&pids[i], g_self, NULL, NULL, args, environ);
        if (rc != 0) FAIL("posix_spawn %s: %s", g_self, strerror(rc));
    }
    struct contender cs[THREADS];
    pthread_t ts[THREADS];
    for (int i = 0; i < THREADS; i++) {
        cs[i] = (struct contender){zk, path, log, i + 1, ITER, 0};
        CHECK(pthread_create(&ts[i], NULL, contender_thread, &cs[i]) == 0);
    }
    int failed = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(ts[i], NULL);
        failed |= cs[i].failed;
    }
    for (int i = 0; i < PROCS; i++) {
        int status = 0;
        if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
            failed = 1;
    }
    CHECK(!failed);
    int rc = check_log(log, (THREADS + PROCS) * ITER);
    unlink(log);
    CHECK(rc == 0);
    CHECK(participant_count(zk, path) == 0);
    zklock_client_free(zk);
    return 0;
}

static int test_read_write(void) {
    char path[128];
    lock_path(path, sizeof path, "rw");
    zklock_client *zk = NULL, *zk2 = NULL;
    if (connect_default(&zk) || connect_default(&zk2)) return 1;
    zklock_lock *r1 = NULL, *w1 = NULL, *r2 = NULL, *w2 = NULL;
    EXPECT(ZKLOCK_OK, zklock_rwlock_new(zk, path, &r1, &w1, &err));
    EXPECT(ZKLOCK_OK, zklock_rwlock_new(zk2, path, &r2, &w2, &err));
    zklock_guard *gr1 = NULL, *gr2 = NULL, *gw1 = NULL, *gw2 = NULL;

    /* readers share */
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(r1, 5000, &gr1, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(r2, 5000, &gr2, &err));
    zklock_participants *p = NULL;
    EXPECT(ZKLOCK_OK, zklock_client_participants(zk, path, &p, &err));
    CHECK(zklock_participants_len(p) == 2);
    CHECK(zklock_participants_is_reader(p, 0) && zklock_participants_is_reader(p, 1));
    CHECK(zklock_participants_holds(p, 0) && zklock_participants_holds(p, 1));
    zklock_participants_free(p);
    /* a writer is excluded (an independent write handle: w2 would be an
     * upgrade of r2) */
    zklock_lock *wx = NULL;
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk2, path, ZKLOCK_MODE_WRITE, &wx, &err));
    EXPECT(ZKLOCK_TIMEOUT, zklock_lock_acquire(wx, 300, &gw2, &err));
    CHECK(gw2 == NULL);
    zklock_lock_free(wx);
    EXPECT(ZKLOCK_WOULD_DEADLOCK, zklock_lock_acquire(w2, 300, &gw2, &err));
    /* upgrade refused */
    EXPECT_MSG(ZKLOCK_WOULD_DEADLOCK, "upgrade", zklock_lock_acquire(w1, 1000, &gw1, &err));
    CHECK(gw1 == NULL);
    CHECK(participant_count(zk, path) == 2);
    EXPECT(ZKLOCK_OK, zklock_guard_release(gr1, NULL, &err));
    EXPECT(ZKLOCK_OK, zklock_guard_release(gr2, NULL, &err));
    zklock_guard_free(gr1);
    zklock_guard_free(gr2);

    /* a writer excludes readers and writers */
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(w1, 5000, &gw1, &err));
    EXPECT(ZKLOCK_TIMEOUT, zklock_lock_acquire(r2, 0, &gr2, &err));
    EXPECT(ZKLOCK_TIMEOUT, zklock_lock_acquire(w2, 200, &gw2, &err));
    /* downgrade: the pair's read side is granted at once to the thread that
     * holds the write side */
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(r1, 0, &gr1, &err));
    /* and explicitly, from the write guard */
    zklock_guard *gd = NULL, *none = NULL;
    EXPECT(ZKLOCK_OK, zklock_guard_downgrade(gw1, &gd, &err));
    CHECK(zklock_guard_sequence(gd) == zklock_guard_sequence(gw1));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_guard_downgrade(gd, &none, &err));
    zklock_guard_free(gd);
    EXPECT(ZKLOCK_OK, zklock_guard_release(gw1, NULL, &err));
    zklock_guard_free(gw1);
    /* now shared with other readers */
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(r2, 5000, &gr2, &err));
    zklock_guard_free(gr2);
    zklock_guard_free(gr1);
    CHECK(participant_count(zk, path) == 0);

    /* independent handles from zklock_lock_new */
    zklock_lock *rd = NULL, *wr = NULL;
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk, path, ZKLOCK_MODE_READ, &rd, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk, path, ZKLOCK_MODE_WRITE, &wr, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(rd, 5000, &gr1, &err));
    EXPECT(ZKLOCK_TIMEOUT, zklock_lock_acquire(wr, 200, &gw1, &err));
    zklock_guard_free(gr1);
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(wr, 5000, &gw1, &err));
    zklock_guard_free(gw1);
    zklock_lock_free(rd);
    zklock_lock_free(wr);

    /* the sides of a pair can be freed in any order */
    zklock_lock_free(w1);
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(r1, 5000, &gr1, &err));
    zklock_lock_free(r1);
    zklock_guard_free(gr1);
    zklock_lock_free(r2);
    zklock_lock_free(w2);
    zklock_client_free(zk2);
    zklock_client_free(zk);
    return 0;
}

static int test_lost_lock_callback(void) {
    const char *proxied = getenv("ZKLOCK_TEST_PROXIED_CONNECT");
    if (!proxied || !*proxied) FAIL("no proxied connect string (run with-zk.sh --proxy)");
    char path[128];
    lock_path(path, sizeof path, "lost");
    zklock_client_options opts;
    zklock_client_options_init(&opts, sizeof opts);
    opts.session_timeout_ms = 2000;
    opts.connect_timeout_ms = 10000;
    zklock_client *zk = NULL, *other = NULL;
    EXPECT(ZKLOCK_OK, zklock_client_new(proxied, &opts, &zk, &err));
    if (connect_default(&other)) return 1;
    zklock_lock *lock = NULL, *lock2 = NULL;
    zklock_guard *g = NULL, *g2 = NULL;
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk, path, ZKLOCK_MODE_EXCLUSIVE, &lock, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(lock, 10000, &g, &err));
    recorder rec, conn;
    recorder_init(&rec);
    recorder_init(&conn);
    EXPECT(ZKLOCK_OK, zklock_guard_on_state_change(g, record_state, &rec, NULL, &err));
    EXPECT(ZKLOCK_OK, zklock_guard_check(g, &err));
    zklock_subscription *sub = NULL;
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_client_on_connection_state(zk, NULL, &conn, &sub, &err));
    EXPECT(ZKLOCK_OK, zklock_client_on_connection_state(zk, record_connection, &conn, &sub, &err));

    if (harness("blackhole")) return 1;
    /* check() fails before the server can expire the session */
    double t0 = now_s();
    while (zklock_guard_check(g, NULL) == ZKLOCK_OK && now_s() - t0 < 10) sleep_ms(20);
    CHECK(zklock_guard_check(g, NULL) != ZKLOCK_OK);
    CHECK(recorder_wait(&rec, ZKLOCK_STATE_SUSPENDED, 10000) == 0);
    /* the server expires the session meanwhile; the lock goes to another */
    EXPECT(ZKLOCK_OK, zklock_lock_new(other, path, ZKLOCK_MODE_EXCLUSIVE, &lock2, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(lock2, 20000, &g2, &err));
    if (harness("heal")) return 1;
    int lost = recorder_wait(&rec, ZKLOCK_STATE_LOST, 15000);
    CHECK(lost == 0);
    /* The client's listener: suspended, session lost, a new session. */
    CHECK(recorder_wait(&conn, (zklock_state)ZKLOCK_CONNECTION_CONNECTED, 15000) == 0);
    pthread_mutex_lock(&conn.mu);
    CHECK(conn.n == 3 && conn.states[0] == ZKLOCK_CONNECTION_SUSPENDED &&
          conn.states[1] == ZKLOCK_CONNECTION_LOST &&
          conn.states[2] == ZKLOCK_CONNECTION_CONNECTED);
    pthread_mutex_unlock(&conn.mu);
    zklock_subscription_free(sub);
    zklock_subscription_free(NULL);
    CHECK(zklock_guard_state(g) == ZKLOCK_STATE_LOST);
    zklock_error *err = NULL;
    zklock_code rc = zklock_guard_check(g, &err);
    CHECK(rc == ZKLOCK_LOCK_LOST || rc == ZKLOCK_SESSION_EXPIRED);
    CHECK(err != NULL && zklock_error_code(err) == rc);
    zklock_error_free(err);
    rc = zklock_guard_release(g, NULL, NULL);
    CHECK(rc == ZKLOCK_LOCK_LOST || rc == ZKLOCK_SESSION_EXPIRED);
    CHECK(zklock_guard_fencing_token(g2) > zklock_guard_fencing_token(g));
    zklock_guard_free(g);
    /* the client replaced its session and works again */
    zklock_guard_free(g2);
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(lock, 20000, &g, &err));
    zklock_guard_free(g);
    CHECK(rec.calls_on_caller_thread == 0);
    zklock_lock_free(lock);
    zklock_lock_free(lock2);
    zklock_client_free(zk);
    zklock_client_free(other);
    recorder_destroy(&rec);
    recorder_destroy(&conn);
    return 0;
}

/* ------------------------------------------------------------------ */
/* The leader example (zklock-ffi/examples/leader.c) as a program       */

enum { LEADERS = 3 };

struct leader_run {
    char dir[128];
    char out[LEADERS][192];
    pid_t pid[LEADERS];
};

/* In the output of instance i: how many "is leader" lines, the last
 * token, and whether it printed `needle`. */
static int leader_scan(const struct leader_run *r, int i, uint64_t *token, const char *needle) {
    FILE *f = fopen(r->out[i], "r");
    if (!f) return 0;
    char line[256], id[64];
    int n = 0, found = 0;
    uint64_t t = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "instance %63s is leader (token %" SCNu64 ")", id, &t) == 2) {
            n++;
            if (token) *token = t;
        }
        if (needle && strstr(line, needle)) found = 1;
    }
    fclose(f);
    return needle ? found : n;
}

/* Waits up to `ms` for instance i's output to contain `needle`. */
static int leader_wait_for(const struct leader_run *r, int i, const char *needle, long ms) {
    double end = now_s() + (double)ms / 1000.0;
    while (!leader_scan(r, i, NULL, needle)) {
        if (now_s() > end) FAIL("instance %d did not print \"%s\" within %ld ms", i, needle, ms);
        sleep_ms(50);
    }
    return 0;
}

/* Stops the instances still running (SIGTERM, then SIGKILL) and reaps
 * them; 0 if each exited with 0 on SIGTERM. */
static int leader_stop_all(struct leader_run *r) {
    int bad = 0;
    for (int i = 0; i < LEADERS; i++)
        if (r->pid[i] > 0) kill(r->pid[i], SIGTERM);
    for (int i = 0; i < LEADERS; i++) {
        if (r->pid[i] <= 0) continue;
        int status = 0;
        double end = now_s() + 15;
        pid_t w;
        while ((w = waitpid(r->pid[i], &status, WNOHANG)) == 0 && now_s() < end) sleep_ms(50);
        if (w == 0) {
            kill(r->pid[i], SIGKILL);
            waitpid(r->pid[i], &status, 0);
            fprintf(stderr, "  instance %d did not stop on SIGTERM\n", i);
            bad = 1;
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "  instance %d exited with status %d\n", i, status);
            bad = 1;
        }
        r->pid[i] = 0;
    }
    return bad;
}

static void leader_cleanup(struct leader_run *r) {
    leader_stop_all(r);
    for (int i = 0; i < LEADERS; i++) unlink(r->out[i]);
    rmdir(r->dir);
}

static int leader_takeover_body(struct leader_run *r, const char *program) {
    const long session_ms = 2000;
    for (int i = 0; i < LEADERS; i++) {
        char id[16], session[16];
        snprintf(id, sizeof id, "%d", i);
        snprintf(session, sizeof session, "%ld", session_ms);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, r->out[i], O_WRONLY | O_CREAT | O_TRUNC, 0600);
        char *args[] = {(char *)program, (char *)connect_string(), id, session, NULL};
        int rc = posix_spawn(&r->pid[i], program, &fa, NULL, args, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (rc != 0) {
            r->pid[i] = 0;
            FAIL("posix_spawn %s: %s", program, strerror(rc));
        }
    }
    /* One leader, the others waiting in acquire. */
    int leader = -1;
    uint64_t token = 0;
    double end = now_s() + 30;
    while (leader < 0) {
        for (int i = 0; i < LEADERS && leader < 0; i++)
            if (leader_scan(r, i, &token, NULL) > 0) leader = i;
        if (leader < 0 && now_s() > end) FAIL("no instance became leader within 30 s");
        if (leader < 0) sleep_ms(50);
    }
    char polling[96];
    snprintf(polling, sizeof polling, "leader %d polling tasks (token %" PRIu64 ")", leader, token);
    if (leader_wait_for(r, leader, polling, 10000)) return 1;
    for (int i = 0; i < LEADERS; i++)
        if (i != leader && leader_wait_for(r, i, "waiting to lead", 30000)) return 1;
    sleep_ms(500);
    int leaders = 0;
    for (int i = 0; i < LEADERS; i++) leaders += leader_scan(r, i, NULL, NULL);
    if (leaders != 1) FAIL("%d \"is leader\" lines among 3 instances, expected 1", leaders);

    /* Kill the leader: it cannot release, the takeover comes from the
     * expiry of its session. */
    CHECK(kill(r->pid[leader], SIGKILL) == 0);
    int status = 0;
    CHECK(waitpid(r->pid[leader], &status, 0) == r->pid[leader]);
    r->pid[leader] = 0;
    double killed = now_s();
    int next = -1;
    uint64_t next_token = 0;
    /* A liveness bound (session timeout + 10 s), not a speed check. */
    while (next < 0) {
        for (int i = 0; i < LEADERS && next < 0; i++)
            if (i != leader && leader_scan(r, i, &next_token, NULL) > 0) next = i;
        if (next < 0 && now_s() - killed > (double)session_ms / 1000.0 + 10)
            FAIL("no instance took over within %ld ms + 10 s of killing leader %d", session_ms,
                 leader);
        if (next < 0) sleep_ms(50);
    }
    printf("  leader %d (token %" PRIu64
           ") killed; instance %d took over after %.1f s (token %" PRIu64 ")\n",
           leader, token, next, now_s() - killed, next_token);
    if (next_token <= token)
        FAIL("the new leader's token %" PRIu64 " is not above %" PRIu64, next_token, token);
    snprintf(polling, sizeof polling, "leader %d polling tasks (token %" PRIu64 ")", next,
             next_token);
    if (leader_wait_for(r, next, polling, 10000)) return 1;
    sleep_ms(500);
    leaders = 0;
    for (int i = 0; i < LEADERS; i++)
        if (i != leader) leaders += leader_scan(r, i, NULL, NULL);
    if (leaders != 1) FAIL("%d survivors claimed leadership, expected 1", leaders);

    /* SIGTERM: each survivor releases (or stops waiting) and exits 0. */
    if (leader_stop_all(r)) FAIL("the surviving instances did not exit cleanly");
    for (int i = 0; i < LEADERS; i++)
        if (i != leader && leader_wait_for(r, i, "exiting", 1000)) return 1;
    zklock_client *zk = NULL;
    if (connect_default(&zk)) return 1;
    int rc = wait_participants(zk, "/examples/scheduler/leader", 0, 15000);
    zklock_client_free(zk);
    return rc;
}

static int test_leader_example_takeover(void) {
    const char *program = getenv("ZKLOCK_TEST_LEADER_EXAMPLE");
    if (!program || !*program) FAIL("ZKLOCK_TEST_LEADER_EXAMPLE is not set (run.sh sets it)");
    struct leader_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.dir, sizeof r.dir, "%s/zklock-c-leader.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(r.dir)) FAIL("mkdtemp: %s", strerror(errno));
    for (int i = 0; i < LEADERS; i++)
        snprintf(r.out[i], sizeof r.out[i], "%s/instance-%d.out", r.dir, i);
    int rc = leader_takeover_body(&r, program);
    if (rc != 0) {
        for (int i = 0; i < LEADERS; i++) {
            FILE *f = fopen(r.out[i], "r");
            char line[256];
            int n = 0;
            fprintf(stderr, "  --- instance %d output (last lines) ---\n", i);
            while (f && fgets(line, sizeof line, f))
                if (!strstr(line, "polling") || n++ < 3) fprintf(stderr, "  %s", line);
            if (f) fclose(f);
        }
    }
    leader_cleanup(&r);
    return rc;
}

/* A callback that frees its own guard (allowed: it runs on the event
 * thread), and a guard freed while its callback would still be queued. */
struct self_free {
    zklock_guard *guard;
    recorder rec;
};

static void free_own_guard(void *userdata, zklock_state state) {
    struct self_free *s = (struct self_free *)userdata;
    if (state == ZKLOCK_STATE_LOST && s->guard) {
        zklock_guard_free(s->guard);
        s->guard = NULL;
    }
    record_state(&s->rec, state);
}

static int test_callback_frees_its_guard(void) {
    char path[128];
    lock_path(path, sizeof path, "cbfree");
    zklock_client *zk = NULL;
    if (connect_default(&zk)) return 1;
    zklock_lock *lock = NULL;
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk, path, ZKLOCK_MODE_EXCLUSIVE, &lock, &err));
    struct self_free s;
    recorder_init(&s.rec);
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(lock, 5000, &s.guard, &err));
    EXPECT(ZKLOCK_OK, zklock_guard_on_state_change(s.guard, free_own_guard, &s, NULL, &err));
    EXPECT(ZKLOCK_OK, zklock_client_close(zk, &err));
    CHECK(recorder_wait(&s.rec, ZKLOCK_STATE_LOST, 10000) == 0);
    CHECK(s.guard == NULL);
    zklock_lock_free(lock);
    zklock_client_free(zk);
    recorder_destroy(&s.rec);
    return 0;
}

/* zklock_guard_free waits for a callback of that guard that is running on
 * the event thread, so userdata may be freed right after it returns. */
struct slow_cb {
    volatile int started;
    volatile int finished;
};

static void slow_callback(void *userdata, zklock_state state) {
    struct slow_cb *s = (struct slow_cb *)userdata;
    (void)state;
    __atomic_store_n(&s->started, 1, __ATOMIC_SEQ_CST);
    sleep_ms(300);
    __atomic_store_n(&s->finished, 1, __ATOMIC_SEQ_CST);
}

static int test_free_waits_for_running_callback(void) {
    char path[128];
    lock_path(path, sizeof path, "cbwait");
    zklock_client *zk = NULL;
    if (connect_default(&zk)) return 1;
    zklock_lock *lock = NULL;
    zklock_guard *g = NULL;
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk, path, ZKLOCK_MODE_EXCLUSIVE, &lock, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(lock, 5000, &g, &err));
    struct slow_cb *s = calloc(1, sizeof *s);
    CHECK(s != NULL);
    EXPECT(ZKLOCK_OK, zklock_guard_on_state_change(g, slow_callback, s, NULL, &err));
    EXPECT(ZKLOCK_OK, zklock_client_close(zk, &err));
    double t0 = now_s();
    while (!__atomic_load_n(&s->started, __ATOMIC_SEQ_CST) && now_s() - t0 < 10) sleep_ms(5);
    CHECK(__atomic_load_n(&s->started, __ATOMIC_SEQ_CST));
    zklock_guard_free(g);
    CHECK(__atomic_load_n(&s->finished, __ATOMIC_SEQ_CST));
    free(s); /* no callback may touch it any more */
    zklock_lock_free(lock);
    zklock_client_free(zk);
    return 0;
}

static int test_bad_input(void) {
    zklock_client *zk = NULL;
    zklock_lock *lock = NULL;
    zklock_guard *g = NULL;
    zklock_participants *p = NULL;
    int64_t sid = 0;

    /* connect strings */
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "hosts", zklock_client_new(NULL, NULL, &zk, &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_client_new("", NULL, &zk, &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_client_new(",,,", NULL, &zk, &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_client_new("host:notaport", NULL, &zk, &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_client_new("host:99999", NULL, &zk, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "UTF-8",
               zklock_client_new("\xff\xfe:2181", NULL, &zk, &err));
    CHECK(zklock_client_new("127.0.0.1:2181/bad//chroot", NULL, &zk, NULL) != ZKLOCK_OK);
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "out",
               zklock_client_new(connect_string(), NULL, NULL, &err));
    CHECK(zk == NULL);

    /* options */
    zklock_client_options_init(NULL, 0);
    zklock_client_options opts;
    /* Not initialised: refused, naming the init function. */
    memset(&opts, 0, sizeof opts);
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "zklock_client_options_init",
               zklock_client_new(connect_string(), &opts, &zk, &err));
    /* A program built with an older, smaller header: the library reads its
     * fields only, the rest are defaults (the bytes past them are garbage
     * here and must not be read). */
    union {
        zklock_client_options o;
        unsigned char bytes[sizeof(zklock_client_options)];
    } older;
    memset(older.bytes, 0xAB, sizeof older.bytes);
    zklock_client_options_init(&older.o, offsetof(zklock_client_options, sasl_user));
    older.o.connect_timeout_ms = 5000;
    EXPECT(ZKLOCK_OK, zklock_client_new(connect_string(), &older.o, &zk, &err));
    zklock_client_free(zk);
    zk = NULL;
    /* A newer, larger header: a field this library does not know is
     * refused when set (never silently ignored), fine when left zero. */
    struct {
        zklock_client_options o;
        const char *future_option;
    } newer;
    zklock_client_options_init(&newer.o, sizeof newer);
    newer.future_option = "set";
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "newer zklock.h",
               zklock_client_new(connect_string(), &newer.o, &zk, &err));
    newer.future_option = NULL;
    EXPECT(ZKLOCK_OK, zklock_client_new(connect_string(), &newer.o, &zk, &err));
    zklock_client_free(zk);
    zk = NULL;
    zklock_client_options_init(&opts, sizeof opts);
    opts.digest_user = "user";
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "digest_password",
               zklock_client_new(connect_string(), &opts, &zk, &err));
    zklock_client_options_init(&opts, sizeof opts);
    opts.digest_password = "pw";
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "digest_user",
               zklock_client_new(connect_string(), &opts, &zk, &err));
    zklock_client_options_init(&opts, sizeof opts);
    opts.digest_user = "us:er";
    opts.digest_password = "pw";
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_client_new(connect_string(), &opts, &zk, &err));
    zklock_client_options_init(&opts, sizeof opts);
    opts.session_timeout_ms = 4000000; /* more than an hour */
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_client_new(connect_string(), &opts, &zk, &err));
    zklock_client_options_init(&opts, sizeof opts);
    opts.connect_timeout_ms = UINT32_MAX; /* more than a day */
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "connect timeout",
               zklock_client_new(connect_string(), &opts, &zk, &err));
    zklock_client_options_init(&opts, sizeof opts);
    opts.operation_timeout_ms = UINT32_MAX;
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "operation timeout",
               zklock_client_new(connect_string(), &opts, &zk, &err));
    CHECK(zk == NULL);

    /* chroots: the reserved subtree, characters outside the BMP, too long */
    {
        char hosts[512];
        const char *chroots[] = {"/zookeeper", "/zookeeper/quota", "/lock-\xf0\x9f\x94\x92"};
        for (size_t i = 0; i < sizeof chroots / sizeof *chroots; i++) {
            snprintf(hosts, sizeof hosts, "%s%s", connect_string(), chroots[i]);
            EXPECT(ZKLOCK_INVALID_PATH, zklock_client_new(hosts, NULL, &zk, &err));
        }
        size_t n = strlen(connect_string()) + 2 * 1024 * 1024 + 2;
        char *huge = malloc(n);
        CHECK(huge != NULL);
        snprintf(huge, n, "%s/", connect_string());
        memset(huge + strlen(huge), 'c', n - strlen(huge) - 1);
        huge[n - 1] = '\0';
        double t1 = now_s();
        zklock_error *err = NULL;
        zklock_code rc = zklock_client_new(huge, NULL, &zk, &err);
        free(huge);
        const char *m = err ? zklock_error_message(err) : "";
        int ok = rc == ZKLOCK_INVALID_PATH && strstr(m, "at most 32768 bytes") != NULL &&
                 strlen(m) < 400;
        zklock_error_free(err);
        CHECK(ok);
        CHECK(now_s() - t1 < 5);
        CHECK(zk == NULL);
    }

    /* a tiny session timeout is negotiated up by the server */
    zklock_client_options_init(&opts, sizeof opts);
    opts.session_timeout_ms = 1;
    EXPECT(ZKLOCK_OK, zklock_client_new(connect_string(), &opts, &zk, &err));
    zklock_client_free(zk);
    zk = NULL;

    /* unreachable host: a short connect timeout */
    zklock_client_options_init(&opts, sizeof opts);
    opts.connect_timeout_ms = 500;
    double t0 = now_s();
    EXPECT(ZKLOCK_CONNECTION_LOSS, zklock_client_new("127.0.0.1:1", &opts, &zk, &err));
    CHECK(now_s() - t0 < 10);
    CHECK(zk == NULL);

    /* digest auth works against the test server */
    zklock_client_options_init(&opts, sizeof opts);
    opts.digest_user = "alice";
    opts.digest_password = "secret";
    EXPECT(ZKLOCK_OK, zklock_client_new(connect_string(), &opts, &zk, &err));
    zklock_client_free(zk);
    zk = NULL;

    if (connect_default(&zk)) return 1;

    /* client functions */
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "client", zklock_client_close(NULL, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "client", zklock_client_session_id(NULL, &sid, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "out", zklock_client_session_id(zk, NULL, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "client", zklock_client_participants(NULL, "/a", &p, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "path", zklock_client_participants(zk, NULL, &p, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "out", zklock_client_participants(zk, "/a", NULL, &err));
    EXPECT(ZKLOCK_INVALID_PATH, zklock_client_participants(zk, "relative", &p, &err));
    EXPECT(ZKLOCK_OK, zklock_client_participants(zk, "/zklock-c-tests/absent", &p, &err));
    CHECK(zklock_participants_len(p) == 0);
    zklock_participants_free(p);
    p = NULL;

    /* lock paths and modes */
    const char *bad_paths[] = {"",
                               "relative",
                               "/",
                               "/trailing/",
                               "/a//b",
                               "/a/./b",
                               "/a/../b",
                               "/zookeeper",
                               "/nul\x01",
                               "/lock-\xf0\x9f\x94\x92",
                               "/a\xef\xbf\xbf"};
    for (size_t i = 0; i < sizeof bad_paths / sizeof *bad_paths; i++) {
        zklock_error *err = NULL;
        zklock_code rc = zklock_lock_new(zk, bad_paths[i], ZKLOCK_MODE_EXCLUSIVE, &lock, &err);
        if (rc != ZKLOCK_INVALID_PATH) {
            char m[256];
            snprintf(m, sizeof m, "%s", err ? zklock_error_message(err) : "");
            zklock_error_free(err);
            FAIL("path \"%s\": %s (%s), expected INVALID_PATH", bad_paths[i], zklock_code_name(rc),
                 m);
        }
        CHECK(err != NULL);
        zklock_error_free(err);
        CHECK(lock == NULL);
    }
    EXPECT_MSG(ZKLOCK_INVALID_PATH, "Basic Multilingual Plane",
               zklock_client_participants(zk, "/lock-\xf0\x9f\x94\x92", &p, &err));
    {
        /* a 2 MB path: refused at once, the client stays usable */
        size_t n = 2 * 1024 * 1024;
        char *huge = malloc(n + 1);
        CHECK(huge != NULL);
        huge[0] = '/';
        memset(huge + 1, 'x', n - 1);
        huge[n] = '\0';
        double t1 = now_s();
        zklock_error *err = NULL;
        zklock_code rc1 = zklock_lock_new(zk, huge, ZKLOCK_MODE_EXCLUSIVE, &lock, &err);
        zklock_error_free(err);
        err = NULL;
        zklock_code rc2 = zklock_client_participants(zk, huge, &p, &err);
        zklock_error_free(err);
        free(huge);
        CHECK(rc1 == ZKLOCK_INVALID_PATH && rc2 == ZKLOCK_INVALID_PATH);
        CHECK(now_s() - t1 < 5);
        CHECK(lock == NULL && p == NULL);
    }
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "UTF-8",
               zklock_lock_new(zk, "/bad\xc3(", ZKLOCK_MODE_EXCLUSIVE, &lock, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "mode",
               zklock_lock_new(zk, "/ok", (zklock_mode)7, &lock, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "mode",
               zklock_lock_new(zk, "/ok", (zklock_mode)-1, &lock, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "client",
               zklock_lock_new(NULL, "/ok", ZKLOCK_MODE_EXCLUSIVE, &lock, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "path",
               zklock_lock_new(zk, NULL, ZKLOCK_MODE_EXCLUSIVE, &lock, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "out",
               zklock_lock_new(zk, "/ok", ZKLOCK_MODE_EXCLUSIVE, NULL, &err));
    zklock_lock *r = NULL, *w = NULL;
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "client", zklock_rwlock_new(NULL, "/ok", &r, &w, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "path", zklock_rwlock_new(zk, NULL, &r, &w, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "out_read", zklock_rwlock_new(zk, "/ok", NULL, &w, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "out_write", zklock_rwlock_new(zk, "/ok", &r, NULL, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "out_write", zklock_rwlock_new(zk, "/ok", &r, &r, &err));
    EXPECT(ZKLOCK_INVALID_PATH, zklock_rwlock_new(zk, "nope", &r, &w, &err));
    CHECK(lock == NULL && r == NULL && w == NULL);

    /* lock functions */
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "lock", zklock_lock_acquire(NULL, 0, &g, &err));
    char path[128];
    lock_path(path, sizeof path, "badinput");
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk, path, ZKLOCK_MODE_EXCLUSIVE, &lock, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "out", zklock_lock_acquire(lock, 0, NULL, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "zklock_lock_acquire_cancellable: argument `lock`",
               zklock_lock_acquire_cancellable(NULL, 0, NULL, &g, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "out",
               zklock_lock_acquire_cancellable(lock, 0, NULL, NULL, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "lock",
               zklock_lock_acquire_async(NULL, 0, NULL, async_done, NULL, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "callback",
               zklock_lock_acquire_async(lock, 0, NULL, NULL, NULL, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "client",
               zklock_lock_new_reentrant(NULL, "/ok", ZKLOCK_MODE_EXCLUSIVE, &r, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "mode",
               zklock_lock_new_reentrant(zk, "/ok", (zklock_mode)9, &r, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "out", zklock_cancel_new(NULL, &err));
    zklock_cancel_cancel(NULL);
    zklock_cancel_free(NULL);
    CHECK(participant_count(zk, path) == 0); /* nothing was created */
    zklock_lock_cancel(NULL);
    CHECK(!zklock_lock_is_held(NULL));

    /* guard functions */
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "guard", zklock_guard_release(NULL, NULL, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "guard", zklock_guard_check(NULL, &err));
    zklock_guard *dg = NULL;
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "guard", zklock_guard_downgrade(NULL, &dg, &err));
    CHECK(dg == NULL);
    CHECK(zklock_guard_state(NULL) == ZKLOCK_STATE_RELEASED);
    CHECK(zklock_guard_fencing_token(NULL) == 0);
    CHECK(zklock_guard_sequence(NULL) == -1);
    CHECK(zklock_guard_session_id(NULL) == 0);
    char buf[8] = "xxxxxxx";
    CHECK(zklock_guard_node_path(NULL, buf, sizeof buf) == 0 && buf[0] == '\0');
    CHECK(zklock_guard_node_path(NULL, NULL, 0) == 0);
    recorder rec;
    recorder_init(&rec);
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "guard",
               zklock_guard_on_state_change(NULL, record_state, &rec, NULL, &err));
    /* extreme timeouts: no limit, never a crash */
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(lock, INT64_MAX, &g, &err));
    EXPECT(ZKLOCK_OK, zklock_guard_release(g, NULL, &err));
    zklock_guard_free(g);
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(lock, INT64_MIN, &g, &err));
    EXPECT(ZKLOCK_OK, zklock_guard_release(g, NULL, &err));
    zklock_guard_free(g);
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(lock, 5000, &g, &err));
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "cb",
               zklock_guard_on_state_change(g, NULL, &rec, NULL, &err));
    /* userdata may be NULL */
    EXPECT(ZKLOCK_OK, zklock_guard_on_state_change(g, record_state, &rec, NULL, &err));
    EXPECT(ZKLOCK_OK, zklock_guard_release(g, NULL, &err));
    EXPECT(ZKLOCK_NOT_HELD, zklock_guard_release(g, NULL, &err));
    EXPECT(ZKLOCK_NOT_HELD, zklock_guard_release(g, NULL, &err));
    zklock_guard_free(g);

    /* participants accessors */
    size_t len = 7;
    CHECK(zklock_participants_len(NULL) == 0);
    CHECK(zklock_participants_name(NULL, 0) == NULL);
    CHECK(zklock_participants_sequence(NULL, 0) == -1);
    CHECK(!zklock_participants_is_reader(NULL, 0));
    CHECK(!zklock_participants_holds(NULL, 0));
    CHECK(zklock_participants_session_id(NULL, 0) == 0);
    CHECK(zklock_participants_data(NULL, 0, &len) == NULL && len == 0);
    CHECK(zklock_participants_data(NULL, 0, NULL) == NULL);

    /* error accessors */
    CHECK(zklock_error_code(NULL) == ZKLOCK_INVALID_ARGUMENT);
    CHECK(zklock_error_message(NULL) != NULL && zklock_error_message(NULL)[0] == '\0');

    /* free(NULL) is a no-op everywhere */
    zklock_client_free(NULL);
    zklock_lock_free(NULL);
    zklock_guard_free(NULL);
    zklock_participants_free(NULL);
    zklock_error_free(NULL);

    zklock_lock_free(lock);
    zklock_client_free(zk);
    recorder_destroy(&rec);
    return 0;
}

/* ------------------------------------------------------------------ */

struct test {
    const char *name;
    int (*fn)(void);
};

/* ACLs: a lock path made with the `creator` ACL of alice shuts out a
 * session without identity and one of another identity (ZKLOCK_NO_AUTH at
 * once), while a second session of alice contends; a malformed ACL is
 * refused by zklock_client_new naming the entry. SASL: a wrong password is
 * ZKLOCK_NO_AUTH, the right one locks under an ACL naming sasl:alice. */
static int test_acl_creator_and_no_auth(void) {
    /* A root of its own: missing ancestors get the ACL too, and the other
     * tests' /zklock-c-tests must stay open. */
    char path[128];
    snprintf(path, sizeof path, "/zklock-c-acl-%d/job", (int)getpid());
    zklock_client_options opts;
    zklock_client_options_init(&opts, sizeof opts);
    zklock_client *bad = NULL;
    opts.acl = "world:anyone:rx";
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "unknown permission",
               zklock_client_new(connect_string(), &opts, &bad, &err));
    CHECK(bad == NULL);

    zklock_client *alice = NULL, *alice2 = NULL, *mallory = NULL, *nobody = NULL;
    opts.acl = "creator";
    opts.digest_user = "alice";
    opts.digest_password = "pw-alice";
    EXPECT(ZKLOCK_OK, zklock_client_new(connect_string(), &opts, &alice, &err));
    EXPECT(ZKLOCK_OK, zklock_client_new(connect_string(), &opts, &alice2, &err));
    opts.digest_user = "mallory";
    EXPECT(ZKLOCK_OK, zklock_client_new(connect_string(), &opts, &mallory, &err));
    if (connect_default(&nobody)) return 1;

    zklock_lock *la = NULL, *la2 = NULL, *lm = NULL, *ln = NULL;
    zklock_guard *g = NULL, *g2 = NULL, *none = NULL;
    EXPECT(ZKLOCK_OK, zklock_lock_new(alice, path, ZKLOCK_MODE_EXCLUSIVE, &la, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_new(alice2, path, ZKLOCK_MODE_EXCLUSIVE, &la2, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_new(mallory, path, ZKLOCK_MODE_EXCLUSIVE, &lm, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_new(nobody, path, ZKLOCK_MODE_EXCLUSIVE, &ln, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(la, 10000, &g, &err));
    double t0 = now_s();
    EXPECT_MSG(ZKLOCK_NO_AUTH, "NoAuth", zklock_lock_acquire(lm, 10000, &none, &err));
    EXPECT_MSG(ZKLOCK_NO_AUTH, "NoAuth", zklock_lock_acquire(ln, 10000, &none, &err));
    CHECK(now_s() - t0 < 5);
    CHECK(none == NULL);
    /* alice's second session waits its turn. */
    EXPECT(ZKLOCK_TIMEOUT, zklock_lock_acquire(la2, 200, &g2, &err));
    EXPECT(ZKLOCK_OK, zklock_guard_release(g, NULL, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(la2, 10000, &g2, &err));
    EXPECT(ZKLOCK_OK, zklock_guard_release(g2, NULL, &err));
    zklock_guard_free(g);
    zklock_guard_free(g2);
    zklock_lock_free(la);
    zklock_lock_free(la2);
    zklock_lock_free(lm);
    zklock_lock_free(ln);
    zklock_client_free(alice);
    zklock_client_free(alice2);
    zklock_client_free(mallory);
    zklock_client_free(nobody);

    /* SASL DIGEST-MD5 (run.sh's server lets alice in with pw-alice). */
    zklock_client_options_init(&opts, sizeof opts);
    opts.sasl_user = "alice";
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "sasl_password",
               zklock_client_new(connect_string(), &opts, &bad, &err));
    opts.sasl_password = "wrong";
    EXPECT_MSG(ZKLOCK_NO_AUTH, "AuthFailed",
               zklock_client_new(connect_string(), &opts, &bad, &err));
    CHECK(bad == NULL);
    opts.sasl_password = "pw-alice";
    opts.acl = "sasl:alice:cdrwa";
    zklock_client *sasl = NULL;
    EXPECT(ZKLOCK_OK, zklock_client_new(connect_string(), &opts, &sasl, &err));
    zklock_lock *ls = NULL;
    zklock_guard *gs = NULL;
    char spath[140];
    snprintf(spath, sizeof spath, "/zklock-c-sasl-%d/job", (int)getpid());
    EXPECT(ZKLOCK_OK, zklock_lock_new(sasl, spath, ZKLOCK_MODE_EXCLUSIVE, &ls, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(ls, 10000, &gs, &err));
    EXPECT(ZKLOCK_OK, zklock_guard_release(gs, NULL, &err));
    zklock_guard_free(gs);
    zklock_lock_free(ls);
    zklock_client_free(sasl);
    return 0;
}

/* TLS (run.sh runs this test again against a server with a TLS port; in
 * the main pass, without ZKLOCK_TEST_SECURE_CONNECT, only the option
 * checks run): the right CA locks; another CA fails at once saying why;
 * bad file combinations are INVALID_ARGUMENT. */
static int test_tls(void) {
    zklock_client_options opts;
    zklock_client_options_init(&opts, sizeof opts);
    zklock_client *zk = NULL;
    opts.tls_cert_file = "/nonexistent/client.pem";
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "needs its key",
               zklock_client_new(connect_string(), &opts, &zk, &err));
    opts.tls_key_file = "/nonexistent/client-key.pem";
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "needs a CA",
               zklock_client_new(connect_string(), &opts, &zk, &err));
    zklock_client_options_init(&opts, sizeof opts);
    opts.tls_ca_file = "/nonexistent/ca.pem";
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "/nonexistent/ca.pem",
               zklock_client_new(connect_string(), &opts, &zk, &err));
    CHECK(zk == NULL);

    const char *secure = getenv("ZKLOCK_TEST_SECURE_CONNECT");
    const char *dir = getenv("ZKLOCK_TEST_TLS_DIR");
    if (!secure || !*secure || !dir || !*dir) {
        printf("     (tls: no TLS server in this pass; run.sh runs it with one)\n");
        return 0;
    }
    char ca[1024], other[1024], cert[1024], key[1024], path[128];
    snprintf(ca, sizeof ca, "%s/ca.pem", dir);
    snprintf(other, sizeof other, "%s/other-ca.pem", dir);
    snprintf(cert, sizeof cert, "%s/client.pem", dir);
    snprintf(key, sizeof key, "%s/client-key.pem", dir);
    lock_path(path, sizeof path, "tls");

    zklock_client_options_init(&opts, sizeof opts);
    opts.connect_timeout_ms = 8000;
    opts.tls_ca_file = other;
    double t0 = now_s();
    EXPECT_MSG(ZKLOCK_CONNECTION_LOSS, "UnknownIssuer",
               zklock_client_new(secure, &opts, &zk, &err));
    CHECK(now_s() - t0 < 6);
    opts.tls_ca_file = ca;
    opts.tls_cert_file = cert;
    opts.tls_key_file = key;
    EXPECT(ZKLOCK_OK, zklock_client_new(secure, &opts, &zk, &err));
    zklock_lock *lock = NULL;
    zklock_guard *g = NULL;
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk, path, ZKLOCK_MODE_EXCLUSIVE, &lock, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(lock, 10000, &g, &err));
    /* Seen from outside, through the plaintext port. */
    zklock_client *plain = NULL;
    if (connect_default(&plain)) return 1;
    CHECK(participant_count(plain, path) == 1);
    EXPECT(ZKLOCK_OK, zklock_guard_release(g, NULL, &err));
    zklock_guard_free(g);
    zklock_lock_free(lock);
    zklock_client_free(zk);
    zklock_client_free(plain);
    return 0;
}

/* Fenced writes: every operation kind and its result, a refused operation
 * named by index and ZooKeeper code with nothing written, bad input, and a
 * write refused once our node is gone (deleted here through a guard of
 * another lock, a third party to this one). */
static int test_fenced_writes(void) {
    char path[128], other[128], state[160], seqp[176], node[512], made_copy[200];
    lock_path(path, sizeof path, "fenced");
    lock_path(other, sizeof other, "fenced-other");
    snprintf(state, sizeof state, "%s-state", path);
    snprintf(seqp, sizeof seqp, "%s/job-", state);
    zklock_client *zk = NULL;
    if (connect_default(&zk)) return 1;
    zklock_lock *lock = NULL, *lock2 = NULL;
    zklock_guard *g = NULL, *g2 = NULL;
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk, path, ZKLOCK_MODE_EXCLUSIVE, &lock, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(lock, 5000, &g, &err));
    const zklock_fenced_op ops[4] = {
        {ZKLOCK_FENCED_CREATE, state, (const uint8_t *)"v0", 2, -1, ZKLOCK_CREATE_PERSISTENT},
        {ZKLOCK_FENCED_SET_DATA, state, (const uint8_t *)"v1", 2, 0, 0},
        {ZKLOCK_FENCED_CREATE, seqp, NULL, 0, -1, ZKLOCK_CREATE_PERSISTENT_SEQUENTIAL},
        {ZKLOCK_FENCED_CHECK, state, NULL, 0, 1, 0},
    };
    zklock_fenced_results *res = NULL;
    EXPECT(ZKLOCK_OK, zklock_guard_fenced_multi(g, ops, 4, &res, &err));
    CHECK(zklock_fenced_results_len(res) == 4);
    CHECK(zklock_fenced_results_kind(res, 0) == ZKLOCK_FENCED_CREATE);
    CHECK(strcmp(zklock_fenced_results_path(res, 0), state) == 0);
    CHECK(zklock_fenced_results_kind(res, 1) == ZKLOCK_FENCED_SET_DATA);
    CHECK(zklock_fenced_results_version(res, 1) == 1 && zklock_fenced_results_path(res, 1) == NULL);
    const char *made = zklock_fenced_results_path(res, 2);
    CHECK(made != NULL && strncmp(made, seqp, strlen(seqp)) == 0 &&
          strlen(made) == strlen(seqp) + 10);
    CHECK(zklock_fenced_results_kind(res, 3) == ZKLOCK_FENCED_CHECK);
    CHECK(zklock_fenced_results_path(res, 4) == NULL &&
          zklock_fenced_results_version(res, 4) == -1);
    CHECK(zklock_fenced_results_len(NULL) == 0);
    snprintf(made_copy, sizeof made_copy, "%s", made);
    made = made_copy; /* the list owns its strings */
    zklock_fenced_results_free(res);
    zklock_fenced_results_free(NULL);
    /* No operations: only the check of our node; results not asked for. */
    EXPECT(ZKLOCK_OK, zklock_guard_fenced_multi(g, NULL, 0, NULL, &err));

    /* ZooKeeper refuses operation 1: its index and code; operation 0 is
     * not made (the version stays 1). */
    const zklock_fenced_op cas[2] = {
        {ZKLOCK_FENCED_SET_DATA, state, (const uint8_t *)"v2", 2, -1, 0},
        {ZKLOCK_FENCED_CHECK, state, NULL, 0, 7, 0},
    };
    zklock_error *e = NULL;
    CHECK_RC(zklock_guard_fenced_multi(g, cas, 2, NULL, &e), ZKLOCK_ZOOKEEPER);
    size_t index = 99;
    const char *code = zklock_error_failed_op(e, &index);
    CHECK(code != NULL && strcmp(code, "BadVersion") == 0 && index == 1);
    zklock_error_free(e);
    CHECK(zklock_error_failed_op(NULL, &index) == NULL);
    const zklock_fenced_op still_v1 = {ZKLOCK_FENCED_CHECK, state, NULL, 0, 1, 0};
    EXPECT(ZKLOCK_OK, zklock_guard_fenced_multi(g, &still_v1, 1, NULL, &err));

    /* Bad input: refused before anything is sent, naming the operation;
     * such errors name no failed operation. */
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "ops", zklock_guard_fenced_multi(g, NULL, 1, NULL, &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_guard_fenced_multi(NULL, ops, 1, NULL, &err));
    zklock_fenced_op bad = {42, state, NULL, 0, -1, 0};
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "ops[0].kind",
               zklock_guard_fenced_multi(g, &bad, 1, NULL, &err));
    bad = (zklock_fenced_op){ZKLOCK_FENCED_CHECK, state, NULL, 0, -2, 0};
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "ops[0].version",
               zklock_guard_fenced_multi(g, &bad, 1, NULL, &err));
    bad = (zklock_fenced_op){ZKLOCK_FENCED_CREATE, state, NULL, 0, -1, 9};
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "ops[0].mode",
               zklock_guard_fenced_multi(g, &bad, 1, NULL, &err));
    bad = (zklock_fenced_op){ZKLOCK_FENCED_SET_DATA, state, NULL, 3, -1, 0};
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "ops[0].data",
               zklock_guard_fenced_multi(g, &bad, 1, NULL, &err));
    bad = (zklock_fenced_op){ZKLOCK_FENCED_DELETE, NULL, NULL, 0, -1, 0};
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "ops[0].path",
               zklock_guard_fenced_multi(g, &bad, 1, NULL, &err));
    const zklock_fenced_op two[2] = {{ZKLOCK_FENCED_CHECK, state, NULL, 0, -1, 0},
                                     {ZKLOCK_FENCED_DELETE, "relative", NULL, 0, -1, 0}};
    e = NULL;
    CHECK_RC(zklock_guard_fenced_multi(g, two, 2, NULL, &e), ZKLOCK_INVALID_PATH);
    CHECK(strstr(zklock_error_message(e), "operation 1") != NULL);
    CHECK(zklock_error_failed_op(e, &index) == NULL);
    zklock_error_free(e);
    CHECK(zklock_guard_node_path(g, node, sizeof node) < sizeof node);
    const zklock_fenced_op own = {ZKLOCK_FENCED_DELETE, node, NULL, 0, -1, 0};
    EXPECT_MSG(ZKLOCK_INVALID_PATH, "inside the lock path",
               zklock_guard_fenced_multi(g, &own, 1, NULL, &err));

    /* Our node is deleted by a third party: the write is refused. */
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk, other, ZKLOCK_MODE_EXCLUSIVE, &lock2, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(lock2, 5000, &g2, &err));
    EXPECT(ZKLOCK_OK, zklock_guard_fenced_multi(g2, &own, 1, NULL, &err));
    EXPECT_MSG(ZKLOCK_LOCK_LOST, "nothing was written",
               zklock_guard_fenced_multi(g, cas, 1, NULL, &err));
    EXPECT(ZKLOCK_OK, zklock_guard_fenced_multi(g2, &still_v1, 1, NULL, &err));
    EXPECT(ZKLOCK_LOCK_LOST, zklock_guard_release(g, NULL, &err));
    EXPECT(ZKLOCK_NOT_HELD, zklock_guard_fenced_multi(g, &still_v1, 1, NULL, &err));

    /* A multi-lock guard fences by its members. */
    zklock_multi *multi = NULL;
    zklock_multi_guard *mg = NULL;
    const char *paths[] = {path};
    EXPECT(ZKLOCK_OK, zklock_multi_new(zk, paths, NULL, 1, &multi, &err));
    EXPECT(ZKLOCK_OK, zklock_multi_acquire(multi, 5000, NULL, &mg, &err));
    const zklock_fenced_op cleanup[2] = {{ZKLOCK_FENCED_DELETE, made, NULL, 0, -1, 0},
                                         {ZKLOCK_FENCED_DELETE, state, NULL, 0, 1, 0}};
    res = NULL;
    EXPECT(ZKLOCK_OK, zklock_multi_guard_fenced_multi(mg, cleanup, 2, &res, &err));
    CHECK(zklock_fenced_results_kind(res, 1) == ZKLOCK_FENCED_DELETE);
    zklock_fenced_results_free(res);
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_multi_guard_fenced_multi(NULL, cleanup, 2, NULL, &err));
    EXPECT(ZKLOCK_OK, zklock_multi_guard_release(mg, NULL, &err));
    zklock_multi_guard_free(mg);
    zklock_multi_free(multi);
    EXPECT(ZKLOCK_OK, zklock_guard_release(g2, NULL, &err));
    zklock_guard_free(g2);
    zklock_guard_free(g);
    zklock_lock_free(lock2);
    zklock_lock_free(lock);
    zklock_client_free(zk);
    return 0;
}

/* set_hosts: a client on the proxy moved to the direct address keeps its
 * session and its lock; bad lists are refused. A reentrant multi-lock is
 * taken again by its thread. */
static int test_set_hosts_and_reentrant_multi(void) {
    const char *proxied = getenv("ZKLOCK_TEST_PROXIED_CONNECT");
    if (!proxied || !*proxied) FAIL("no proxied connect string (run with-zk.sh --proxy)");
    char path[128], path2[128];
    lock_path(path, sizeof path, "set-hosts");
    lock_path(path2, sizeof path2, "set-hosts-b");
    zklock_client *zk = NULL;
    EXPECT(ZKLOCK_OK, zklock_client_new(proxied, NULL, &zk, &err));
    int64_t before = 0, after = 0;
    EXPECT(ZKLOCK_OK, zklock_client_session_id(zk, &before, &err));
    zklock_multi *multi = NULL;
    zklock_multi_guard *outer = NULL, *inner = NULL;
    const char *paths[] = {path, path2};
    EXPECT(ZKLOCK_OK, zklock_multi_new_reentrant(zk, paths, NULL, 2, &multi, &err));
    EXPECT(ZKLOCK_OK, zklock_multi_acquire(multi, 5000, NULL, &outer, &err));
    EXPECT(ZKLOCK_OK, zklock_multi_acquire(multi, 0, NULL, &inner, &err));
    CHECK(zklock_multi_guard_fencing_token(outer, 0) == zklock_multi_guard_fencing_token(inner, 0));
    EXPECT(ZKLOCK_OK, zklock_multi_guard_release(inner, NULL, &err));
    CHECK(participant_count(zk, path) == 1);

    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_client_set_hosts(zk, NULL, &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_client_set_hosts(NULL, connect_string(), &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_client_set_hosts(zk, "", &err));
    char other_root[256];
    snprintf(other_root, sizeof other_root, "%s/elsewhere", connect_string());
    EXPECT_MSG(ZKLOCK_INVALID_ARGUMENT, "chroot", zklock_client_set_hosts(zk, other_root, &err));
    EXPECT(ZKLOCK_OK, zklock_client_set_hosts(zk, connect_string(), &err));
    /* The move: suspended for a moment, then held again on the same
     * session. */
    int held = 0;
    for (int i = 0; i < 200 && !held; i++) {
        sleep_ms(50);
        held = zklock_multi_guard_check(outer, NULL) == ZKLOCK_OK;
    }
    CHECK(held);
    EXPECT(ZKLOCK_OK, zklock_client_session_id(zk, &after, &err));
    CHECK(before == after);
    CHECK(participant_count(zk, path) == 1 && participant_count(zk, path2) == 1);
    EXPECT(ZKLOCK_OK, zklock_multi_guard_release(outer, NULL, &err));
    CHECK(participant_count(zk, path) == 0);
    zklock_multi_guard_free(inner);
    zklock_multi_guard_free(outer);
    zklock_multi_free(multi);
    EXPECT(ZKLOCK_OK, zklock_client_close(zk, &err));
    EXPECT(ZKLOCK_CLOSED, zklock_client_set_hosts(zk, connect_string(), &err));
    zklock_client_free(zk);
    return 0;
}

/* A revocation callback: recorded as the state value 99. */
static void record_revocation(void *userdata) {
    record_state(userdata, (zklock_state)99);
}

/* Revocation: one client asks, the holder's callback is told on the event
 * thread, and the lock stays held until the holder releases. */
static int test_revocation(void) {
    char path[128], node[512];
    lock_path(path, sizeof path, "revoke");
    zklock_client *zk = NULL, *asker = NULL;
    if (connect_default(&zk) || connect_default(&asker)) return 1;
    zklock_lock *lock = NULL;
    zklock_guard *g = NULL;
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk, path, ZKLOCK_MODE_EXCLUSIVE, &lock, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(lock, 5000, &g, &err));
    recorder rec;
    recorder_init(&rec);
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_guard_on_revocation(g, NULL, &rec, NULL, &err));
    EXPECT(ZKLOCK_OK, zklock_guard_on_revocation(g, record_revocation, &rec, NULL, &err));
    CHECK(!zklock_guard_revocation_requested(g) && !zklock_guard_revocation_requested(NULL));
    CHECK(zklock_guard_node_path(g, node, sizeof node) < sizeof node);
    bool revoked = false;
    EXPECT(ZKLOCK_OK, zklock_client_revoke(asker, node, &revoked, &err));
    CHECK(revoked);
    CHECK(recorder_wait(&rec, (zklock_state)99, 10000) == 0);
    CHECK(rec.calls_on_caller_thread == 0);
    CHECK(zklock_guard_revocation_requested(g));
    EXPECT(ZKLOCK_OK, zklock_guard_check(g, &err));
    EXPECT(ZKLOCK_OK, zklock_guard_release(g, NULL, &err));
    EXPECT(ZKLOCK_OK, zklock_client_revoke(asker, node, &revoked, &err));
    CHECK(!revoked);
    EXPECT(ZKLOCK_INVALID_PATH, zklock_client_revoke(asker, "relative", NULL, &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_client_revoke(asker, NULL, NULL, &err));
    zklock_guard_free(g);
    recorder_destroy(&rec);
    zklock_lock_free(lock);
    zklock_client_free(asker);
    zklock_client_free(zk);
    return 0;
}

/* Metrics: a grant, a try that finds the lock held, a release; the
 * requests by operation; a caller with a smaller struct gets only its
 * fields. */
static int test_metrics(void) {
    char path[128];
    lock_path(path, sizeof path, "metrics");
    zklock_client *zk = NULL, *other = NULL;
    if (connect_default(&zk) || connect_default(&other)) return 1;
    zklock_lock *lock = NULL, *lock2 = NULL;
    zklock_guard *g = NULL, *g2 = NULL;
    EXPECT(ZKLOCK_OK, zklock_lock_new(zk, path, ZKLOCK_MODE_EXCLUSIVE, &lock, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_new(other, path, ZKLOCK_MODE_EXCLUSIVE, &lock2, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(lock, 5000, &g, &err));
    EXPECT(ZKLOCK_TIMEOUT, zklock_lock_acquire(lock2, 0, &g2, &err));
    EXPECT(ZKLOCK_OK, zklock_guard_release(g, NULL, &err));
    zklock_metrics m;
    memset(&m, 0xff, sizeof m);
    EXPECT(ZKLOCK_OK, zklock_client_metrics(zk, &m, sizeof m, &err));
    CHECK(m.acquires_granted == 1 && m.acquires_timed_out == 0 && m.acquires_failed == 0);
    CHECK(m.wait_count == 1 && m.hold_count == 1 && m.hold_seconds >= 0.0);
    CHECK(m.losses == 0 && m.session_expiries == 0 && m.requests >= 3);
    CHECK(zklock_client_requests_sent(zk, "create2") >= 1);
    CHECK(zklock_client_requests_sent(zk, "delete") == 1);
    CHECK(zklock_client_requests_sent(zk, "no-such-op") == 0 &&
          zklock_client_requests_sent(NULL, "create2") == 0);
    EXPECT(ZKLOCK_OK, zklock_client_metrics(other, &m, sizeof m, &err));
    CHECK(m.acquires_granted == 0 && m.acquires_timed_out == 1);
    /* An older caller's struct: only its first field is written. */
    uint64_t small[2] = {0, 42};
    EXPECT(ZKLOCK_OK, zklock_client_metrics(zk, (zklock_metrics *)small, sizeof small[0], &err));
    CHECK(small[0] == 1 && small[1] == 42);
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_client_metrics(zk, NULL, sizeof m, &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_client_metrics(zk, &m, 0, &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_client_metrics(NULL, &m, sizeof m, &err));
    zklock_guard_free(g);
    zklock_lock_free(lock2);
    zklock_lock_free(lock);
    zklock_client_free(other);
    zklock_client_free(zk);
    return 0;
}

/* A semaphore on a shared count: one permit held, a waiter gets in when the
 * count is set to 2. */
static int test_shared_count_semaphore(void) {
    char path[128], count[128];
    lock_path(path, sizeof path, "shared-sem");
    lock_path(count, sizeof count, "shared-count");
    zklock_client *zk = NULL;
    if (connect_default(&zk)) return 1;
    zklock_lock *sem = NULL;
    zklock_guard *a = NULL, *b = NULL;
    EXPECT(ZKLOCK_OK, zklock_client_set_shared_count(zk, count, 1, &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_client_set_shared_count(zk, count, -1, &err));
    EXPECT(ZKLOCK_OK, zklock_semaphore_new_with_count(zk, path, count, NULL, &sem, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(sem, 5000, &a, &err));
    EXPECT(ZKLOCK_TIMEOUT, zklock_lock_acquire(sem, 0, &b, &err));
    EXPECT(ZKLOCK_OK, zklock_client_set_shared_count(zk, count, 2, &err));
    int32_t now = -7;
    EXPECT(ZKLOCK_OK, zklock_client_shared_count(zk, count, &now, &err));
    if (now != 2) FAIL("shared count read back as %d, not 2", (int)now);
    char missing[160];
    snprintf(missing, sizeof missing, "%s-none", count);
    EXPECT(ZKLOCK_ZOOKEEPER, zklock_client_shared_count(zk, missing, &now, &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT, zklock_client_shared_count(zk, count, NULL, &err));
    EXPECT(ZKLOCK_INVALID_PATH, zklock_client_shared_count(zk, "relative", &now, &err));
    EXPECT(ZKLOCK_OK, zklock_lock_acquire(sem, 5000, &b, &err));
    EXPECT(ZKLOCK_OK, zklock_guard_release(b, NULL, &err));
    EXPECT(ZKLOCK_OK, zklock_guard_release(a, NULL, &err));
    zklock_lock *bad = NULL;
    char inside[160];
    snprintf(inside, sizeof inside, "%s/count", path);
    EXPECT(ZKLOCK_INVALID_ARGUMENT,
           zklock_semaphore_new_with_count(zk, path, inside, NULL, &bad, &err));
    EXPECT(ZKLOCK_INVALID_ARGUMENT,
           zklock_semaphore_new_with_count(zk, path, NULL, NULL, &bad, &err));
    zklock_guard_free(b);
    zklock_guard_free(a);
    zklock_lock_free(sem);
    zklock_client_free(zk);
    return 0;
}

/* A loopback port that nothing listens on (bound, then let go), or 0. */
static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

/* Nothing listens: zklock_client_new fails with CONNECTION_LOSS naming the
 * address, long before the 30 s connect timeout (issue 30). */
static int test_connect_refused(void) {
    int port = free_port();
    CHECK(port > 0);
    char hosts[64], says[96];
    snprintf(hosts, sizeof hosts, "127.0.0.1:%d", port);
    snprintf(says, sizeof says, "connection refused by 127.0.0.1:%d", port);
    zklock_client_options opts;
    zklock_client_options_init(&opts, sizeof opts);
    opts.connect_timeout_ms = 30000;
    zklock_client *zk = NULL;
    double t0 = now_s();
    EXPECT_MSG(ZKLOCK_CONNECTION_LOSS, says, zklock_client_new(hosts, &opts, &zk, &err));
    double took = now_s() - t0;
    CHECK(zk == NULL);
    if (took >= 10.0) FAIL("refused, yet it waited %.1f s of the 30 s connect timeout", took);
    return 0;
}

static const struct test TESTS[] = {
    {"version_and_code_names", test_version_and_code_names},
    {"bad_input", test_bad_input},
    {"lifecycle", test_lifecycle},
    {"timeout_leaves_no_node", test_timeout_leaves_no_node},
    {"election", test_election},
    {"semaphore", test_semaphore},
    {"logger", test_logger},
    {"multi_lock", test_multi_lock},
    {"cancel_from_another_thread", test_cancel_from_another_thread},
    {"cancel_one_blocking_call", test_cancel_one_blocking_call},
    {"acquire_async_and_per_call_cancel", test_acquire_async_and_per_call_cancel},
    {"read_write", test_read_write},
    {"mutual_exclusion_threads_and_processes", test_mutual_exclusion_threads_and_processes},
    {"close", test_close},
    {"objects_inherited_through_fork_fail_fast", test_objects_inherited_through_fork_fail_fast},
    {"callback_frees_its_guard", test_callback_frees_its_guard},
    {"free_waits_for_running_callback", test_free_waits_for_running_callback},
    {"lost_lock_callback", test_lost_lock_callback},
    {"leader_example_takeover", test_leader_example_takeover},
    {"acl_creator_and_no_auth", test_acl_creator_and_no_auth},
    {"tls", test_tls},
    {"connect_refused", test_connect_refused},
    {"fenced_writes", test_fenced_writes},
    {"set_hosts_and_reentrant_multi", test_set_hosts_and_reentrant_multi},
    {"revocation", test_revocation},
    {"metrics", test_metrics},
    {"shared_count_semaphore", test_shared_count_semaphore},
};

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--worker") == 0) return worker_main(argc, argv);
    g_self = argv[0];
    if (argc > 1 && strcmp(argv[1], "--fork-test") == 0) return fork_test_main();
    g_main_thread = pthread_self();
    setvbuf(stdout, NULL, _IOLBF, 0);
    int passed = 0, failed = 0;
    size_t n = sizeof TESTS / sizeof *TESTS;
    for (size_t i = 0; i < n; i++) {
        int selected = argc == 1;
        for (int a = 1; a < argc; a++)
            if (strcmp(argv[a], TESTS[i].name) == 0) selected = 1;
        if (!selected) continue;
        double t0 = now_s();
        int rc = TESTS[i].fn();
        printf("%s c::%s (%.1f s)\n", rc == 0 ? "ok  " : "FAIL", TESTS[i].name, now_s() - t0);
        if (rc == 0)
            passed++;
        else
            failed++;
    }
    printf("test_zklock: %d passed, %d failed\n", passed, failed);
    return failed == 0 && passed > 0 ? 0 : 1;
}
