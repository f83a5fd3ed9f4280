/** The same list at run time, from the Rust core. */
export declare const ERROR_CODES: ReadonlyArray<ZkLockErrorCode>

/**
 * A zklock failure. `code` names the kind (`"TIMEOUT"`, `"LOCK_LOST"`, ...,
 * the C enum names without `ZKLOCK_`); a number out of range (a timeout) is
 * `"INVALID_ARGUMENT"`. Arguments of the wrong type are `TypeError` instead.
 */
export declare class ZkLockError extends Error {
  constructor(message: string, code: ZkLockErrorCode, options?: { cause?: unknown })
  readonly code: ZkLockErrorCode
  /**
   * For a fenced write (`guard.fencedMulti()`) that ZooKeeper refused
   * because of one of the caller's operations: which one and why (nothing
   * of the write was made). Absent for every other error.
   */
  readonly failedOp?: FailedOp
}

/** The operation of a fenced write that ZooKeeper refused (`ZkLockError.failedOp`). */
export interface FailedOp {
  /** The index of the operation in the array given to `fencedMulti()`. */
  readonly index: number
  /**
   * ZooKeeper's name for the error, as its Java client spells it without
   * the prefix: `'BadVersion'`, `'NoNode'`, `'NodeExists'`, `'NotEmpty'`,
   * `'NoAuth'`, ...
   */
  readonly code: string
}

export interface AcquireOptions {
  /**
   * Aborting it cancels this acquire: it rejects with a ZkLockError of code
   * `"CANCELLED"` (with the signal's reason as `cause`) and leaves no node.
   */
  signal?: AbortSignal
}

export interface Guard {
  /**
   * The "stop now" signal of work done under this guard: aborted once the
   * lock is no longer safely held (lost, suspended, past the safety clock,
   * released, or the client closed), no later than `check()` starts to
   * throw (a moment after, handed over to the JavaScript thread), with the
   * `ZkLockError` that `check()` throws then as its `reason`. Pass it to
   * `fetch`, timers or child processes. One signal per guard, made on
   * first use; it does not keep Node running.
   */
  readonly signal: AbortSignal
  /**
   * Releases the guard; nothing if it was already released. Rejects with
   * `LOCK_LOST` if the lock had been lost. It is what `await using guard =
   * await lock.acquire()` calls at the end of the block, where the runtime
   * has `await using` (not Node 18 to 22: there, release in a `finally`
   * or use `client.withLock()`).
   */
  [Symbol.asyncDispose](): Promise<void>
}

export interface MultiGuard {
  /**
   * As `Guard.signal`: aborted once any member is no longer safely held,
   * with the `ZkLockError` that `check()` throws then (naming the member).
   */
  readonly signal: AbortSignal
  /** Releases every member (what `await using` calls); nothing if already released. */
  [Symbol.asyncDispose](): Promise<void>
}

export declare namespace Client {
  /**
   * Connects to ZooKeeper and opens a session.
   *
   * Rejects with `ZkLockError` `INVALID_ARGUMENT` / `INVALID_PATH` for a
   * malformed connect string, `CONNECTION_LOSS` when no server answered
   * within `connectTimeoutMs`. Throws `ZkLockError` `INVALID_ARGUMENT` for
   * a timeout out of range or an unknown option (naming it and the valid
   * ones, also in `auth`, `sasl` and `tls`), `TypeError` for an option of
   * the wrong type.
   */
  function connect(options: ConnectOptions): Promise<Client>
}

export interface Client {
  /**
   * Acquires an exclusive lock on `path`, runs `fn(guard, signal)` and
   * releases the lock, also when `fn` throws. `signal` is `guard.signal`:
   * aborted when the lock is no longer safely held, so `fn` can stop. It is
   * made (a watcher per call) only when `fn` declares a second parameter;
   * otherwise it is `undefined` and `guard.signal` gives it on demand.
   * Resolves with what `fn` returned (also when `fn` released the guard
   * itself); rejects with `fn`'s error, or with `LOCK_LOST` (`CLOSED` if
   * the client was closed) when the lock was lost while `fn` ran (so it
   * may have run without the lock).
   */
  withLock<T>(
    path: string,
    fn: (guard: Guard, signal: AbortSignal) => T | Promise<T>,
    options?: AcquireOptions,
  ): Promise<T>
  /**
   * Joins the leader election on `path` with the id `id`, waits until it
   * leads, runs `fn(guard, signal)` and resigns when `fn` ends (also when
   * it throws). `signal` aborts when leadership is lost, so `fn` can stop
   * (made only when `fn` declares a second parameter, as for `withLock`).
   * Resolves with what `fn` returned (also when `fn` resigned itself);
   * rejects with `fn`'s error, or with `LOCK_LOST` (`CLOSED` if the client
   * was closed) when leadership was lost while `fn` ran. To stand again
   * after losing, call it again.
   */
  withLeadership<T>(
    path: string,
    id: string | Buffer,
    fn: (guard: Guard, signal: AbortSignal) => T | Promise<T>,
    options?: AcquireOptions,
  ): Promise<T>
}
