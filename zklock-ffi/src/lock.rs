//! `zklock_lock`: a lock handle (exclusive, read or write side).

use std::ffi::{c_char, c_void};
use std::sync::Mutex;

use zklock_core::{AcquireOptions, Lock, LockMode, LockOptions};

use crate::cancel::zklock_cancel;

use crate::client::zklock_client;
use crate::error::{zklock_code, zklock_error};
use crate::guard::zklock_guard;
use crate::util::{arg_ref, arg_str, call, guarded, invalid_arg, null_arg, out_arg, timeout_from_ms, UserData};

pub use crate::vocabulary::zklock_mode;

/// A `zklock_mode` value passed in from C (received as a plain integer so
/// that an out-of-range value is an ordinary input; the header spells it
/// `zklock_mode`).
pub type zklock_mode_arg = i32;

/// A lock handle on one path: exclusive, read side or write side.
///
/// Every acquire is its own contender (its own node and guard): threads
/// that share one handle exclude each other, and a thread that acquires a
/// lock it holds waits behind itself, unless the handle was made with
/// `zklock_lock_new_reentrant` (then a thread's blocking acquires while it
/// holds the lock get another guard on its node). A lock keeps its client
/// alive. Thread-safe: any function may be called on one lock from several
/// threads at once. Freed with `zklock_lock_free`.
pub struct zklock_lock {
    inner: Lock,
}

/// Makes a lock handle on `path` of `mode` (a `zklock_mode` value). Does not
/// talk to ZooKeeper (the path is created on the first acquire). On success
/// `*out` receives a new lock that the caller frees with `zklock_lock_free`.
///
/// # Errors
/// `ZKLOCK_INVALID_ARGUMENT` for NULL arguments, a path that is not UTF-8 or
/// an unknown mode; `ZKLOCK_INVALID_PATH` for a malformed path (it must be
/// absolute, without a trailing slash or empty components);
/// `ZKLOCK_CLOSED` after `zklock_client_close`.
///
/// # Safety
/// `client` is NULL or a live client; `path` is NULL or NUL-terminated;
/// `out` and `err` are NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_lock_new(
    client: *const zklock_client,
    path: *const c_char,
    mode: zklock_mode_arg,
    out: *mut *mut zklock_lock,
    err: *mut *mut zklock_error,
) -> zklock_code {
    // SAFETY: pointers as documented (caller's contract).
    unsafe { new_lock("zklock_lock_new", client, path, mode, LockOptions::default(), out, err) }
}

/// The body of `zklock_lock_new` and `zklock_lock_new_reentrant`.
///
/// # Safety
/// As `zklock_lock_new`.
unsafe fn new_lock(
    f: &str,
    client: *const zklock_client,
    path: *const c_char,
    mode: zklock_mode_arg,
    options: LockOptions,
    out: *mut *mut zklock_lock,
    err: *mut *mut zklock_error,
) -> zklock_code {
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(f, err, || {
            let client = arg_ref(client, f, "client")?;
            let path = arg_str(path, f, "path")?;
            let out = out_arg(out, f, "out")?;
            let mode = mode_of(f, "mode", mode)?;
            let lock = client.inner.lock_with(path, mode, options)?;
            out.write(Box::into_raw(Box::new(zklock_lock { inner: lock })));
            Ok(())
        })
    }
}

/// The lock mode a `zklock_mode` value given as argument `name` of `f`
/// stands for.
pub(crate) fn mode_of(f: &str, name: &str, mode: zklock_mode_arg) -> zklock_core::Result<LockMode> {
    zklock_mode::parse(mode).ok_or_else(|| invalid_arg(f, name, &format!("is not a zklock_mode ({mode})")))
}

/// `zklock_lock_new` for a handle that is reentrant per thread (Curator's
/// `InterProcessMutex`): a blocking acquire (`zklock_lock_acquire`,
/// `zklock_lock_acquire_cancellable`) by a thread that holds the lock
/// through this handle gets another guard on the same node at once; the
/// node is deleted when the last of them is released. Other threads, and
/// `zklock_lock_acquire_async` calls, are contenders like anyone else.
///
/// # Errors
/// As `zklock_lock_new`.
///
/// # Safety
/// As `zklock_lock_new`.
#[no_mangle]
pub unsafe extern "C" fn zklock_lock_new_reentrant(
    client: *const zklock_client,
    path: *const c_char,
    mode: zklock_mode_arg,
    out: *mut *mut zklock_lock,
    err: *mut *mut zklock_error,
) -> zklock_code {
    // SAFETY: pointers as documented (caller's contract).
    unsafe { new_lock("zklock_lock_new_reentrant", client, path, mode, LockOptions::default().reentrant(), out, err) }
}

/// Makes a participant with the id `id` of the leader election on `path`
/// (Curator `LeaderLatch` compatible: Curator latches and zklock
/// participants on one path elect one leader between them). Acquiring it
/// (`zklock_lock_acquire` and the other acquire functions) joins the
/// election and returns once it leads: the guard is the leadership, with
/// states, `zklock_guard_check`, state callbacks and a fencing token as for
/// a lock; releasing it resigns. Lost leadership is not taken back by
/// itself: acquire again to rejoin. `zklock_client_participants` lists the
/// participants (each one's data is its id; the one that holds leads).
/// Free with `zklock_lock_free`.
///
/// # Errors
/// `ZKLOCK_INVALID_ARGUMENT` for a NULL argument, an id that is not UTF-8,
/// over 64 KiB or `__REVOKE__`; `ZKLOCK_INVALID_PATH`; `ZKLOCK_CLOSED`.
///
/// # Safety
/// `client` is NULL or a live client; `path` and `id` are NULL or
/// NUL-terminated; `out` and `err` are NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_election_new(
    client: *const zklock_client,
    path: *const c_char,
    id: *const c_char,
    out: *mut *mut zklock_lock,
    err: *mut *mut zklock_error,
) -> zklock_code {
    const F: &str = "zklock_election_new";
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(F, err, || {
            let client = arg_ref(client, F, "client")?;
            let path = arg_str(path, F, "path")?;
            let id = arg_str(id, F, "id")?;
            let out = out_arg(out, F, "out")?;
            let lock = client.inner.election(path, id)?;
            out.write(Box::into_raw(Box::new(zklock_lock { inner: lock })));
            Ok(())
        })
    }
}

/// Makes a counting semaphore on `path` with `permits` leases (Curator
/// `InterProcessSemaphoreV2` compatible: Curator semaphores and zklock ones
/// on one path with the same permits share the leases). Each acquire of it
/// (`zklock_lock_acquire` and the other acquire functions) takes one lease
/// and returns once it holds it: at most `permits` acquires hold at once.
/// The guard is the lease, with states, `zklock_guard_check`, state
/// callbacks and a fencing token as for a lock; releasing it returns the
/// lease. Lease nodes are `<path>/leases/_c_<uuid>-lease-<seq>` holding
/// `data` (NULL: none); a contender holds the lock `<path>/locks` while it
/// waits. Every participant must use the same `permits`. Not reentrant.
/// Free with `zklock_lock_free`.
///
/// # Errors
/// `ZKLOCK_INVALID_ARGUMENT` for a NULL `client`, `path` or `out`, `permits`
/// of 0 or over 2147483647, `data` that is not UTF-8, over 64 KiB or
/// `__REVOKE__`; `ZKLOCK_INVALID_PATH`; `ZKLOCK_CLOSED`.
///
/// # Safety
/// `client` is NULL or a live client; `path` and `data` are NULL or
/// NUL-terminated; `out` and `err` are NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_semaphore_new(
    client: *const zklock_client,
    path: *const c_char,
    permits: u32,
    data: *const c_char,
    out: *mut *mut zklock_lock,
    err: *mut *mut zklock_error,
) -> zklock_code {
    const F: &str = "zklock_semaphore_new";
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(F, err, || {
            let client = arg_ref(client, F, "client")?;
            let path = arg_str(path, F, "path")?;
            let data = if data.is_null() { "" } else { arg_str(data, F, "data")? };
            let out = out_arg(out, F, "out")?;
            let options = LockOptions::default().data(data);
            let lock = client.inner.semaphore(path, permits as usize, options)?;
            out.write(Box::into_raw(Box::new(zklock_lock { inner: lock })));
            Ok(())
        })
    }
}

/// `zklock_semaphore_new` whose permits come from the shared count at
/// `count_path` (Curator's `InterProcessSemaphoreV2` with a
/// `SharedCountReader`; 4 bytes, big-endian, as Curator's `SharedCount`
/// keeps it: `zklock_client_set_shared_count`). A waiter gets in as soon as
/// the count grows; leases held stay when it shrinks. The count node must
/// exist when an acquire starts (else the acquire fails
/// `ZKLOCK_ZOOKEEPER`; `ZKLOCK_INVALID_ARGUMENT` if it is not a 4-byte
/// count).
///
/// # Errors
/// As `zklock_semaphore_new` (without `permits`); `ZKLOCK_INVALID_ARGUMENT`
/// for a count path that is the semaphore's path, inside it or an ancestor.
///
/// # Safety
/// As `zklock_semaphore_new`; `count_path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn zklock_semaphore_new_with_count(
    client: *const zklock_client,
    path: *const c_char,
    count_path: *const c_char,
    data: *const c_char,
    out: *mut *mut zklock_lock,
    err: *mut *mut zklock_error,
) -> zklock_code {
    const F: &str = "zklock_semaphore_new_with_count";
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(F, err, || {
            let client = arg_ref(client, F, "client")?;
            let path = arg_str(path, F, "path")?;
            let count_path = arg_str(count_path, F, "count_path")?;
            let data = if data.is_null() { "" } else { arg_str(data, F, "data")? };
            let out = out_arg(out, F, "out")?;
            let lock = client.inner.semaphore_with_count(path, count_path, LockOptions::default().data(data))?;
            out.write(Box::into_raw(Box::new(zklock_lock { inner: lock })));
            Ok(())
        })
    }
}

/// Sets the shared count at `path` to `count` (4 bytes, big-endian, as
/// Curator's `SharedCount.setCount`), making the node and its parents if
/// they do not exist. Blocks for a few requests, at most the operation
/// timeout each.
///
/// # Errors
/// `ZKLOCK_INVALID_ARGUMENT` for NULL arguments, a negative count or a
/// node that has or had children (a lock path or its parent, containers ZooKeeper
/// would delete with the count); `ZKLOCK_INVALID_PATH`; `ZKLOCK_NO_AUTH`;
/// `ZKLOCK_CLOSED`; `ZKLOCK_CONNECTION_LOSS` / `ZKLOCK_TIMEOUT`.
///
/// # Safety
/// `client` is NULL or a live client; `path` is NULL or NUL-terminated;
/// `err` is NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_client_set_shared_count(
    client: *const zklock_client,
    path: *const c_char,
    count: i32,
    err: *mut *mut zklock_error,
) -> zklock_code {
    const F: &str = "zklock_client_set_shared_count";
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(F, err, || {
            let client = arg_ref(client, F, "client")?;
            let path = arg_str(path, F, "path")?;
            client.inner.set_shared_count(path, count)
        })
    }
}

/// Reads the shared count at `path` into `*out` (as written: a negative
/// count, which a semaphore takes as 0 permits, too). Blocks for one
/// request, at most the operation timeout.
///
/// # Errors
/// `ZKLOCK_INVALID_ARGUMENT` for NULL arguments or a node that does not
/// hold a 4-byte count; `ZKLOCK_ZOOKEEPER` when the node does not exist;
/// `ZKLOCK_INVALID_PATH`; `ZKLOCK_NO_AUTH`; `ZKLOCK_CLOSED`;
/// `ZKLOCK_CONNECTION_LOSS` / `ZKLOCK_TIMEOUT`. `*out` is unchanged on
/// failure.
///
/// # Threads
/// Any thread.
///
/// # Safety
/// `client` is NULL or a live client; `path` is NULL or NUL-terminated;
/// `out` is NULL or valid for writing an `int32_t`; `err` is NULL or
/// valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_client_shared_count(
    client: *const zklock_client,
    path: *const c_char,
    out: *mut i32,
    err: *mut *mut zklock_error,
) -> zklock_code {
    const F: &str = "zklock_client_shared_count";
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(F, err, || {
            let client = arg_ref(client, F, "client")?;
            let path = arg_str(path, F, "path")?;
            let out = out_arg(out, F, "out")?;
            out.write(client.inner.shared_count(path)?);
            Ok(())
        })
    }
}

/// Makes a read/write lock pair on `path` whose sides know each other
/// (Curator `InterProcessReadWriteLock` compatible). On success `*out_read`
/// and `*out_write` receive the two sides; free each with `zklock_lock_free`
/// (in any order).
///
/// - Readers share; a writer excludes everyone; a reader that arrives after
///   a waiting writer queues behind it, so writers do not starve.
/// - **Downgrade**: `zklock_guard_downgrade` on a write guard of the pair,
///   or a blocking acquire of the read side by the thread that holds the
///   write side, succeeds at once (then release the write guard).
/// - **Upgrade** is refused: a blocking acquire of the write side by the
///   thread that holds the read side fails with `ZKLOCK_WOULD_DEADLOCK`.
///
/// # Errors
/// `ZKLOCK_INVALID_ARGUMENT` for NULL arguments (or `out_read` ==
/// `out_write`) or a path that is not UTF-8; `ZKLOCK_INVALID_PATH`;
/// `ZKLOCK_CLOSED`.
///
/// # Safety
/// `client` is NULL or a live client; `path` is NULL or NUL-terminated;
/// `out_read`, `out_write` and `err` are NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_rwlock_new(
    client: *const zklock_client,
    path: *const c_char,
    out_read: *mut *mut zklock_lock,
    out_write: *mut *mut zklock_lock,
    err: *mut *mut zklock_error,
) -> zklock_code {
    const F: &str = "zklock_rwlock_new";
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(F, err, || {
            let client = arg_ref(client, F, "client")?;
            let path = arg_str(path, F, "path")?;
            let out_read = out_arg(out_read, F, "out_read")?;
            let out_write = out_arg(out_write, F, "out_write")?;
            if out_read == out_write {
                return Err(invalid_arg(F, "out_write", "is the same pointer as out_read"));
            }
            let (read, write) = client.inner.read_write_lock(path, LockOptions::default())?.into_sides();
            let read = Box::new(zklock_lock { inner: read });
            let write = Box::new(zklock_lock { inner: write });
            out_read.write(Box::into_raw(read));
            out_write.write(Box::into_raw(write));
            Ok(())
        })
    }
}

/// Acquires the lock, waiting at most `timeout_ms` milliseconds in total:
/// `< 0` waits without limit, `0` tries once without waiting, `> 0` is one
/// deadline for every wait and retry. On success `*out` receives a new guard
/// (free it with `zklock_guard_free`, which releases the lock if still held).
///
/// On timeout, cancel or error our node is deleted (in the background if
/// ZooKeeper cannot be reached now). A session that expires while waiting
/// costs our place: the acquire queues again with a new session.
///
/// # Errors
/// `ZKLOCK_TIMEOUT` when the deadline passed (someone else holds the lock;
/// an ordinary outcome, `*err` is still filled when `err` is not NULL);
/// `ZKLOCK_CANCELLED` after `zklock_lock_cancel`; `ZKLOCK_WOULD_DEADLOCK`
/// for an upgrade on a `zklock_rwlock_new` pair; `ZKLOCK_CLOSED`;
/// `ZKLOCK_ZOOKEEPER` for refusals such as missing permissions;
/// `ZKLOCK_INVALID_ARGUMENT` for NULL arguments.
///
/// # Threads
/// Blocks the calling thread; any thread, also a state-change callback
/// (which then delays the client's other callbacks).
///
/// # Safety
/// `lock` is NULL or a live lock; `out` and `err` are NULL or valid for
/// writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_lock_acquire(
    lock: *const zklock_lock,
    timeout_ms: i64,
    out: *mut *mut zklock_guard,
    err: *mut *mut zklock_error,
) -> zklock_code {
    // SAFETY: pointers as documented (caller's contract).
    unsafe { acquire_blocking("zklock_lock_acquire", lock, timeout_ms, std::ptr::null(), out, err) }
}

/// `zklock_lock_acquire` with a cancel token for this call: `cancel` (may
/// be NULL) cancels this call only. `zklock_cancel_cancel` from another
/// thread makes it return `ZKLOCK_CANCELLED` (its node is deleted), also
/// when cancelled before this call; other acquires of the same handle go
/// on. Otherwise as `zklock_lock_acquire`.
///
/// # Errors
/// As `zklock_lock_acquire`; `ZKLOCK_CANCELLED` once the token is
/// cancelled.
///
/// # Threads
/// Blocks the calling thread, as `zklock_lock_acquire`.
///
/// # Safety
/// `lock` is NULL or a live lock; `cancel` is NULL or a live token; `out`
/// and `err` are NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_lock_acquire_cancellable(
    lock: *const zklock_lock,
    timeout_ms: i64,
    cancel: *const zklock_cancel,
    out: *mut *mut zklock_guard,
    err: *mut *mut zklock_error,
) -> zklock_code {
    // SAFETY: pointers as documented (caller's contract).
    unsafe { acquire_blocking("zklock_lock_acquire_cancellable", lock, timeout_ms, cancel, out, err) }
}

/// The body of the blocking acquires, as function `f`.
///
/// # Safety
/// As `zklock_lock_acquire_cancellable`.
unsafe fn acquire_blocking(
    f: &str,
    lock: *const zklock_lock,
    timeout_ms: i64,
    cancel: *const zklock_cancel,
    out: *mut *mut zklock_guard,
    err: *mut *mut zklock_error,
) -> zklock_code {
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(f, err, || {
            let lock = arg_ref(lock, f, "lock")?;
            let out = out_arg(out, f, "out")?;
            let guard = lock.inner.acquire(call_options(timeout_ms, cancel))?;
            out.write(Box::into_raw(Box::new(zklock_guard { inner: guard, gates: Mutex::default() })));
            Ok(())
        })
    }
}

/// The options of one acquire call from C: `timeout_ms` by the C rule and
/// the token, if any.
///
/// # Safety
/// `cancel` is NULL or a live token.
pub(crate) unsafe fn call_options(timeout_ms: i64, cancel: *const zklock_cancel) -> AcquireOptions {
    let options = AcquireOptions::new().timeout(timeout_from_ms(timeout_ms));
    // SAFETY: caller's contract.
    match unsafe { cancel.as_ref() } {
        Some(c) => options.cancel_token(c.token.clone()),
        None => options,
    }
}

/// The callback of `zklock_lock_acquire_async`, called exactly once with the
/// outcome: `code` is `ZKLOCK_OK` and `guard` a new guard (the callee owns
/// it: free it with `zklock_guard_free`, which releases the lock if still
/// held), or `code` is the error and `err` a new error object (the callee
/// owns it: free it with `zklock_error_free`); the other pointer is NULL.
/// `user_data` is the pointer given to `zklock_lock_acquire_async`.
pub type zklock_acquire_cb = Option<
    unsafe extern "C" fn(user_data: *mut c_void, code: zklock_code, guard: *mut zklock_guard, err: *mut zklock_error),
>;

/// `zklock_lock_acquire` for programs with their own event loop (libuv,
/// libevent, epoll): starts the acquire and returns at once; `callback` is
/// called exactly once with the outcome (see `zklock_acquire_cb`). Waits at
/// most `timeout_ms` as `zklock_lock_acquire` does. `cancel` (may be NULL)
/// cancels this call only: `zklock_cancel_cancel` makes it complete with
/// `ZKLOCK_CANCELLED` and delete its node, also if cancelled before this
/// call; a cancel that comes after the grant is too late, and the callback
/// gets the guard (free it). The lock handle and the token may be freed while the acquire goes
/// on (it keeps what it needs).
///
/// # Errors
/// Returned here, and then `callback` is never called: `ZKLOCK_INVALID_ARGUMENT`
/// for a NULL `lock` or `callback`; `ZKLOCK_CLOSED`; `ZKLOCK_CANCELLED`
/// for a token already cancelled. Everything else reaches `callback`
/// (`ZKLOCK_TIMEOUT`, `ZKLOCK_CANCELLED`, ...). Never reentrant, and no
/// implicit downgrade or upgrade refusal on a read/write pair (a callback
/// acquire has no thread): a write acquire by the holder of the read side
/// waits behind its own read node until its timeout.
///
/// # Threads
/// Never blocks. `callback` runs on the client's event thread (where the
/// state-change callbacks run, one at a time): it may call any zklock
/// function, including blocking ones, but should return promptly; to wake
/// an event loop, write to its eventfd or pipe, or use `uv_async_send`.
/// Do not wait for the callback inside another callback of the same
/// client (a state-change or acquire callback): it would wait for itself.
///
/// # Safety
/// `lock` is NULL or a live lock; `cancel` is NULL or a live token; `err`
/// is NULL or valid for writing a pointer; `callback` is safe to call from
/// another thread with `user_data`.
#[no_mangle]
pub unsafe extern "C" fn zklock_lock_acquire_async(
    lock: *const zklock_lock,
    timeout_ms: i64,
    cancel: *const zklock_cancel,
    callback: zklock_acquire_cb,
    user_data: *mut c_void,
    err: *mut *mut zklock_error,
) -> zklock_code {
    const F: &str = "zklock_lock_acquire_async";
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(F, err, || {
            let lock = arg_ref(lock, F, "lock")?;
            let Some(callback) = callback else { return Err(null_arg(F, "callback")) };
            // Errors found before the call starts are this function's; the
            // rest are the callback's.
            let call = lock.inner.acquire_async(call_options(timeout_ms, cancel)).started()?;
            let user_data = UserData(user_data);
            lock.inner.client().spawn_then(call, move |out| {
                let user_data = user_data;
                let (code, guard, error) = match out {
                    Ok(g) => (
                        zklock_code::ZKLOCK_OK,
                        Box::into_raw(Box::new(zklock_guard { inner: g, gates: Mutex::default() })),
                        std::ptr::null_mut(),
                    ),
                    Err(e) => {
                        let code = zklock_code::from(e.kind());
                        (code, std::ptr::null_mut(), Box::into_raw(Box::new(zklock_error::new(code, e.message()))))
                    },
                };
                // SAFETY: the caller's contract for callback and user_data.
                callback(user_data.get(), code, guard, error);
            })?;
            Ok(())
        })
    }
}

/// Makes every acquire in progress on this lock handle fail with
/// `ZKLOCK_CANCELLED` (their nodes are deleted). An acquire that starts
/// later is not affected. NULL: nothing.
///
/// # Threads
/// Any thread; never blocks (safe from a signal-handling thread or a
/// callback, not from an async signal handler itself).
///
/// # Safety
/// `lock` is NULL or a live lock.
#[no_mangle]
pub unsafe extern "C" fn zklock_lock_cancel(lock: *const zklock_lock) {
    // SAFETY: caller's contract.
    guarded((), || {
        if let Some(l) = unsafe { lock.as_ref() } {
            l.inner.cancel();
        }
    })
}

/// Whether this handle holds the lock now (state `HELD` or `SUSPENDED`).
/// False for NULL.
///
/// # Safety
/// `lock` is NULL or a live lock.
#[no_mangle]
pub unsafe extern "C" fn zklock_lock_is_held(lock: *const zklock_lock) -> bool {
    // SAFETY: caller's contract.
    guarded(false, || unsafe { lock.as_ref() }.is_some_and(|l| l.inner.is_held()))
}

/// Frees a lock handle. Guards acquired through it stay valid (they hold
/// the lock until released); the other side of a `zklock_rwlock_new` pair
/// stays valid too. `zklock_lock_free(NULL)` does nothing.
///
/// # Safety
/// `lock` is NULL or a lock that was not freed yet and that no other thread
/// is using (no acquire in progress); it must not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn zklock_lock_free(lock: *mut zklock_lock) {
    if !lock.is_null() {
        // SAFETY: lock came from Box::into_raw and is freed once (caller's contract).
        guarded((), || drop(unsafe { Box::from_raw(lock) }));
    }
}
