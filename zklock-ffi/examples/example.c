/*
 * example.c - typical use of libzklock: connect, take a lock with a timeout,
 * check it is still safely held, use the fencing token, release, free.
 *
 *     cc example.c $(pkg-config --cflags --libs zklock) -o example
 *     ./example 127.0.0.1:2181 [/lock/path]
 *
 * The connect string may also come from the environment (ZKLOCK_CONNECT).
 */
#include <zklock.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* Prints a failed call's error and frees it. */
static int report(const char *what, zklock_code rc, zklock_error *err) {
    fprintf(stderr, "%s failed: %s: %s\n", what, zklock_code_name(rc),
            err ? zklock_error_message(err) : "");
    zklock_error_free(err);
    return 1;
}

/* Told of every state change, on the client's event thread. */
static void on_state(void *userdata, zklock_state state) {
    const char *name = (const char *)userdata;
    fprintf(stderr, "%s is now %s\n", name,
            state == ZKLOCK_STATE_HELD        ? "HELD"
            : state == ZKLOCK_STATE_SUSPENDED ? "SUSPENDED"
            : state == ZKLOCK_STATE_LOST      ? "LOST"
                                              : "RELEASED");
}

int main(int argc, char **argv) {
    const char *hosts = argc > 1 ? argv[1] : getenv("ZKLOCK_CONNECT");
    const char *path = argc > 2 ? argv[2] : "/examples/nightly-job";
    if (hosts == NULL) hosts = getenv("ZKLOCK_TEST_CONNECT");
    if (hosts == NULL) hosts = "127.0.0.1:2181";

    zklock_client *zk = NULL;
    zklock_lock *lock = NULL;
    zklock_guard *guard = NULL;
    zklock_error *err = NULL;
    zklock_code rc;
    int status = 1;

    zklock_client_options opts;
    zklock_client_options_init(&opts, sizeof opts);
    opts.session_timeout_ms = 10000;
    opts.connect_timeout_ms = 15000;
    if ((rc = zklock_client_new(hosts, &opts, &zk, &err)) != ZKLOCK_OK)
        return report("connect", rc, err);

    if ((rc = zklock_lock_new(zk, path, ZKLOCK_MODE_EXCLUSIVE, &lock, &err)) != ZKLOCK_OK) {
        report("zklock_lock_new", rc, err);
        goto out;
    }

    /* Wait at most 10 s; ZKLOCK_TIMEOUT means someone else holds it. */
    rc = zklock_lock_acquire(lock, 10000, &guard, &err);
    if (rc == ZKLOCK_TIMEOUT) {
        fprintf(stderr, "someone else holds %s\n", path);
        zklock_error_free(err);
        goto out;
    } else if (rc != ZKLOCK_OK) {
        report("acquire", rc, err);
        goto out;
    }
    if ((rc = zklock_guard_on_state_change(guard, on_state, (void *)path, NULL, &err)) !=
        ZKLOCK_OK) {
        report("zklock_guard_on_state_change", rc, err);
        goto out;
    }

    /* Before each step that must not run twice: still safely held? */
    if ((rc = zklock_guard_check(guard, &err)) != ZKLOCK_OK) {
        report("check", rc, err);
        goto out;
    }
    char node[256];
    zklock_guard_node_path(guard, node, sizeof node);
    printf("holding %s with fencing token %" PRIu64 "\n", node, zklock_guard_fencing_token(guard));

    bool pending = false;
    if ((rc = zklock_guard_release(guard, &pending, &err)) != ZKLOCK_OK) {
        report("release", rc, err);
        goto out;
    }
    printf("released%s\n", pending ? " (the delete finishes in the background)" : "");
    status = 0;

out:
    /* Shutdown order: guards, then locks, then the client. */
    zklock_guard_free(guard);
    zklock_lock_free(lock);
    zklock_client_free(zk);
    return status;
}
