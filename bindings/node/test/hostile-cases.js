'use strict'
// The table of hostile input and misuse (issue 14), shared by
// hostile.test.js (in this process) and hostile-child.js (in a child
// process, so that an abort is a failed case, not a dead test runner).
//
// Each case calls one public entry point with one bad value and says what
// must come of it: a ZkLockError with one of the given codes, a TypeError
// with a given code, or (for the controls) a value. Every case must end
// within BOUND_MS, whether the entry point throws or returns a Promise.
//
// Host names that pass the core's syntax check are looked up by the system
// resolver, so the table keeps garbage out of host names that would reach
// DNS: non-BMP characters and NUL go in ports and chroots, and only names
// that the resolver refuses locally (NUL, longer than 1025 bytes) go in
// host names.

const zklock = require('..')
const { testBuild } = require('./test-build.js')
const { Client, Lock, Guard, ZkLockError } = zklock

/** The longest any case may take. */
const BOUND_MS = 5000

// --- expectations -------------------------------------------------------------

/** A ZkLockError whose code is one of `codes`. */
const zkErr = (...codes) => ({ kind: 'zk', codes })
/** A TypeError with `code` (Node's codes for bad arguments). */
const typeErr = (code = 'ERR_INVALID_ARG_TYPE') => ({ kind: 'type', code })
/** A value (returned or resolved) for which `pred` holds. */
const ok = (what, pred) => ({ kind: 'ok', what, pred })

const isLock = ok('a Lock', (v) => v instanceof Lock)
const isGuard = ok('a Guard', (v) => v instanceof Guard && v.state === 'HELD')
const isClient = ok('a Client', (v) => v instanceof Client && !v.closed)
const isUndefined = ok('undefined', (v) => v === undefined)

// --- hostile values -------------------------------------------------------------

/** Numbers no timeout may accept in any option (NaN, <= 0, infinite, huge).
 * Any positive finite number up to the maximum is accepted, however small
 * (below half a nanosecond it is 1 ns). */
const BAD_OPTION_NUMBERS = [NaN, -1, 0, -0, Infinity, -Infinity, 1e23, 1e300, Number.MAX_VALUE, -Number.MAX_VALUE]
/** Values of the wrong type for a number option. */
const WRONG_TYPES = [
  ['the string "1000"', '1000'],
  ['an object', {}],
  ['an array', [1000]],
  ['true', true],
  ['a bigint', 1000n],
  ['a symbol', Symbol('t')],
]

const NON_BMP = '\u{1D11E}' // MUSICAL SYMBOL G CLEF, a surrogate pair in UTF-16
const TWO_MB = 2 * 1024 * 1024

/** Lock paths the core must reject with INVALID_PATH; [label, path]. */
const BAD_PATHS = [
  ['empty', ''],
  ['relative', 'locks/a'],
  ['the root', '/'],
  ['//', '//'],
  ['trailing slash /a/', '/a/'],
  ['empty component /a//b', '/a//b'],
  ['. component', '/a/./b'],
  ['.. component', '/a/..'],
  ['NUL', '/a\0b'],
  ['a control character (BEL)', '/a\u0007b'],
  ['DEL', '/a\u007fb'],
  ['a C1 control character', '/a\u0085b'],
  ['a private-use character', '/a\ue000b'],
  ['a lone surrogate', '/a\ud800b'],
  ['U+FFFE', '/a\ufffeb'],
  ['/zookeeper', '/zookeeper'],
  ['/zookeeper/x', '/zookeeper/x'],
  ['a non-BMP character', `/a${NON_BMP}b`],
  ['a 2 MB path', '/' + 'a'.repeat(TWO_MB)],
]
/** Values of the wrong type for a path. */
const BAD_PATH_TYPES = [
  ['a number', 5],
  ['undefined', undefined],
  ['null', null],
  ['an object', {}],
  ['a String object', new String('/a')],
  ['a symbol', Symbol('p')],
]

/** A fresh lock path. */
let pathCount = 0
const freshPath = (name) => `/node-hostile/${process.pid}-${name.replace(/[^a-z0-9]+/gi, '-')}-${++pathCount}`

// --- the table ------------------------------------------------------------------

/**
 * The groups of cases. A case is `{ name, call(ctx), expect }`; `ctx` is
 * made by makeContext().
 */
function groups() {
  const g = {}

  // Client.connect: every timeout option.
  g.connectOptions = []
  const options = [
    ['sessionTimeoutMs', 3_600_000],
    ['connectTimeoutMs', 86_400_000],
    ['operationTimeoutMs', 86_400_000],
  ]
  for (const [option, max] of options) {
    for (const v of [...BAD_OPTION_NUMBERS, max + 1]) {
      g.connectOptions.push({
        name: `connect ${option}: ${Object.is(v, -0) ? '-0' : v}`,
        call: (ctx) => Client.connect({ hosts: ctx.hosts, [option]: v }),
        expect: zkErr('INVALID_ARGUMENT'),
        message: option,
      })
    }
    // (null is not "absent" here: the options are typed `number | undefined`.)
    for (const [label, v] of [['null', null], ...WRONG_TYPES]) {
      g.connectOptions.push({
        name: `connect ${option}: ${label}`,
        call: (ctx) => Client.connect({ hosts: ctx.hosts, [option]: v }),
        expect: typeErr(),
      })
    }
    for (const v of [undefined, max]) {
      g.connectOptions.push({
        name: `connect ${option}: ${v} (control: accepted)`,
        call: (ctx) => Client.connect({ hosts: ctx.hosts, [option]: v }),
        expect: isClient,
      })
    }
  }

  // Client.connect: connect strings.
  const quick = { connectTimeoutMs: 1000 }
  g.hosts = [
    ['empty', ''],
    ['blanks', '   '],
    ['only "/"', '/'],
    ['":2181" (no host)', ':2181'],
    ['"," (no server)', ','],
    ['a stray comma', '127.0.0.1:1,,127.0.0.1:2'],
    ['port 0', '127.0.0.1:0'],
    ['port 70000', '127.0.0.1:70000'],
    ['port -1', '127.0.0.1:-1'],
    ['a non-numeric port', '127.0.0.1:abc'],
    ['a non-BMP character in the port', `127.0.0.1:21${NON_BMP}81`],
    ['NUL in the port', '127.0.0.1:21\u00001'],
    ['an unclosed [', '[::1:2181'],
  ].map(([label, hosts]) => ({
    name: `connect hosts: ${label}`,
    call: () => Client.connect({ hosts, ...quick }),
    expect: zkErr('INVALID_ARGUMENT'),
  }))
  g.hosts.push(
    ...[
      ['NUL in the chroot', '/a\0b'],
      ['an empty chroot component', '/a//b'],
      ['a lone surrogate in the chroot', '/a\ud800'],
    ].map(([label, chroot]) => ({
      name: `connect hosts: ${label}`,
      call: (ctx) => Client.connect({ hosts: ctx.hosts + chroot, ...quick }),
      expect: zkErr('INVALID_PATH'),
    })),
    ...[
      ['a chroot under /zookeeper', '/zookeeper/app'],
      ['a non-BMP character in the chroot', `/a${NON_BMP}`],
      ['a 2 MB chroot', '/' + 'a'.repeat(TWO_MB)],
    ].map(([label, chroot]) => ({
      name: `connect hosts: ${label}`,
      call: (ctx) => Client.connect({ hosts: ctx.hosts + chroot, ...quick }),
      expect: zkErr('INVALID_PATH'),
    })),
    // Syntactically fine, refused by the resolver without asking DNS: the
    // core may reject them up front, or give up after connectTimeoutMs.
    {
      name: 'connect hosts: NUL in the host name',
      call: () => Client.connect({ hosts: 'local\0host:2181', ...quick }),
      expect: zkErr('INVALID_ARGUMENT', 'CONNECTION_LOSS'),
    },
    {
      name: 'connect hosts: a 2 MB host name',
      call: () => Client.connect({ hosts: 'a'.repeat(TWO_MB) + ':2181', ...quick }),
      expect: zkErr('INVALID_ARGUMENT', 'CONNECTION_LOSS'),
    },
    {
      name: 'connect hosts: a closed port gives up after connectTimeoutMs',
      call: () => Client.connect({ hosts: '127.0.0.1:1', ...quick }),
      expect: zkErr('CONNECTION_LOSS'),
    },
    ...[
      ['a number', 2181],
      ['null', null],
      ['undefined', undefined],
      ['an object', {}],
      ['a String object', new String('127.0.0.1:1')],
    ].map(([label, hosts]) => ({
      name: `connect hosts: ${label}`,
      call: () => Client.connect({ hosts }),
      expect: typeErr(),
    })),
    ...[
      ['undefined', undefined],
      ['null', null],
      ['a string', '127.0.0.1:2181'],
      ['a number', 5],
    ].map(([label, o]) => ({
      name: `connect options: ${label}`,
      call: () => Client.connect(o),
      expect: typeErr(),
    })),
  )

  // Lock paths through every entry point that takes one.
  g.paths = []
  const pathEntries = [
    ['lock', (c, p) => c.lock(p)],
    ['readLock', (c, p) => c.readLock(p)],
    ['writeLock', (c, p) => c.writeLock(p)],
    ['readWriteLock', (c, p) => c.readWriteLock(p)],
    ['participants', (c, p) => c.participants(p)],
    ['withLock', (c, p) => c.withLock(p, () => 'ran')],
  ]
  for (const [entry, call] of pathEntries) {
    for (const [label, p] of BAD_PATHS) {
      g.paths.push({
        name: `${entry}(path: ${label})`,
        // All on the shared client: a refused path must not disturb it.
        call: (ctx) => call(ctx.client, p),
        expect: zkErr('INVALID_PATH'),
      })
    }
    for (const [label, p] of BAD_PATH_TYPES) {
      g.paths.push({ name: `${entry}(path: ${label})`, call: (ctx) => call(ctx.client, p), expect: typeErr() })
    }
  }
  g.paths.push(
    {
      name: 'lock(path: "/with space/ünïcode") (control: accepted)',
      call: (ctx) => ctx.client.lock('/with space/ünïcode'),
      expect: isLock,
    },
    {
      name: 'withLock on a good path (control: runs fn)',
      call: (ctx) => ctx.client.withLock(freshPath('withlock'), () => 'ran'),
      expect: ok('"ran"', (v) => v === 'ran'),
    },
  )

  // lock.acquire({ timeoutMs }).
  g.acquireTimeouts = []
  for (const v of [NaN, -1, -0.001, -Infinity, -1e300, -Number.MAX_VALUE]) {
    g.acquireTimeouts.push({
      name: `acquire timeoutMs: ${v}`,
      call: (ctx) => ctx.client.lock(freshPath('t')).acquire({ timeoutMs: v }),
      expect: zkErr('INVALID_ARGUMENT'),
      message: 'timeoutMs',
    })
  }
  for (const [label, v] of WRONG_TYPES) {
    g.acquireTimeouts.push({
      name: `acquire timeoutMs: ${label}`,
      call: (ctx) => ctx.client.lock(freshPath('t')).acquire({ timeoutMs: v }),
      expect: typeErr(),
    })
  }
  // Accepted: 0 tries once, the rest wait (without limit from 1e12 ms on).
  // A positive timeout is a deadline however small (the core's one rule):
  // 5e-324 ms (1 ns) has passed before the first request, even on a free lock.
  g.acquireTimeouts.push({
    name: 'acquire timeoutMs: 5e-324 on a free lock times out at once',
    call: (ctx) => ctx.client.lock(freshPath('free')).acquire({ timeoutMs: 5e-324 }),
    expect: zkErr('TIMEOUT'),
  })
  // The same for a multi-lock, whose members share the deadline (an
  // outside test had it granted: the time left was passed on as zero).
  for (const v of [5e-324, 0.005]) {
    g.acquireTimeouts.push({
      name: `multiLock acquire timeoutMs: ${v} on free locks times out`,
      call: (ctx) =>
        ctx.client.multiLock([{ path: freshPath('free') }, { path: freshPath('free') }]).acquire({ timeoutMs: v }),
      expect: zkErr('TIMEOUT'),
    })
  }
  const accepted = [0, -0, 5000, 1e12, 1e12 + 1, 1e23, 1e300, Number.MAX_VALUE, Infinity, undefined, null]
  for (const v of accepted) {
    const label = Object.is(v, -0) ? '-0' : String(v)
    g.acquireTimeouts.push({
      name: `acquire timeoutMs: ${label} on a free lock (control: granted)`,
      call: (ctx) => ctx.client.lock(freshPath('free')).acquire({ timeoutMs: v }),
      expect: isGuard,
    })
    if (v === 0 || Object.is(v, -0)) continue
    g.acquireTimeouts.push({
      name: `acquire timeoutMs: ${label} on a held lock, aborted after 200 ms`,
      call: (ctx) => ctx.client.lock(ctx.heldPath).acquire({ timeoutMs: v, signal: AbortSignal.timeout(200) }),
      expect: zkErr('CANCELLED'),
    })
  }
  g.acquireTimeouts.push(
    {
      name: 'acquire timeoutMs: 1 on a held lock times out',
      call: (ctx) => ctx.client.lock(ctx.heldPath).acquire({ timeoutMs: 1 }),
      expect: zkErr('TIMEOUT'),
    },
    {
      name: 'acquire timeoutMs: 0 on a held lock times out at once',
      call: (ctx) => ctx.client.lock(ctx.heldPath).acquire({ timeoutMs: 0 }),
      expect: zkErr('TIMEOUT'),
    },
    {
      name: 'acquire timeoutMs: NaN with an aborted signal is still INVALID_ARGUMENT',
      call: (ctx) => ctx.client.lock(freshPath('t')).acquire({ timeoutMs: NaN, signal: AbortSignal.abort() }),
      expect: zkErr('INVALID_ARGUMENT'),
    },
    {
      name: 'acquire timeoutMs: 1e300 with an aborted signal',
      call: (ctx) => ctx.client.lock(freshPath('t')).acquire({ timeoutMs: 1e300, signal: AbortSignal.abort() }),
      expect: zkErr('CANCELLED'),
    },
    {
      name: 'withLock timeoutMs: -1',
      call: (ctx) => ctx.client.withLock(freshPath('t'), () => 'ran', { timeoutMs: -1 }),
      expect: zkErr('INVALID_ARGUMENT'),
    },
    {
      name: 'withLock timeoutMs: 1e300 (control: runs fn)',
      call: (ctx) => ctx.client.withLock(freshPath('t'), () => 'ran', { timeoutMs: 1e300 }),
      expect: ok('"ran"', (v) => v === 'ran'),
    },
  )

  // Every entry point of a closed client, its lock handles and guards.
  g.afterClose = [
    ['lock', (x) => x.client.lock('/a')],
    ['readLock', (x) => x.client.readLock('/a')],
    ['writeLock', (x) => x.client.writeLock('/a')],
    ['readWriteLock', (x) => x.client.readWriteLock('/a')],
    ['participants', (x) => x.client.participants('/a')],
    ['withLock', (x) => x.client.withLock('/a', () => 'ran')],
    ['sessionId', (x) => x.client.sessionId()],
    ['acquire', (x) => x.lock.acquire()],
    ['acquire timeoutMs 0', (x) => x.lock.acquire({ timeoutMs: 0 })],
    ['acquire timeoutMs 1e300', (x) => x.lock.acquire({ timeoutMs: 1e300 })],
    ['tryAcquire', (x) => x.lock.tryAcquire()],
    ['guard.check', (x) => x.guard.check()],
  ].map(([label, call]) => ({
    name: `after close(): ${label}`,
    call: (ctx) => call(ctx.closed),
    expect: zkErr('CLOSED'),
  }))
  g.afterClose.push(
    { name: 'after close(): close again', call: (ctx) => ctx.closed.client.close(), expect: isUndefined },
    { name: 'after close(): closed', call: (ctx) => ctx.closed.client.closed, expect: ok('true', (v) => v === true) },
    { name: 'after close(): lock.held', call: (ctx) => ctx.closed.lock.held, expect: ok('false', (v) => v === false) },
    { name: 'after close(): lock.cancel', call: (ctx) => ctx.closed.lock.cancel(), expect: isUndefined },
    {
      name: 'after close(): guard.state',
      call: (ctx) => ctx.closed.guard.state,
      expect: ok('"LOST"', (v) => v === 'LOST'),
    },
    {
      name: 'after close(): guard.release, then again',
      call: async (ctx) => {
        const g = ctx.closed.guard2
        await g.release().catch((e) => {
          if (!(e instanceof ZkLockError && (e.code === 'CLOSED' || e.code === 'LOCK_LOST'))) throw e
        })
        return g.release()
      },
      expect: zkErr('NOT_HELD'),
    },
  )

  // Misuse of live objects.
  g.misuse = [
    {
      name: 'release twice',
      call: async (ctx) => {
        const g = await ctx.client.lock(freshPath('twice')).acquire()
        await g.release()
        return g.release()
      },
      expect: zkErr('NOT_HELD'),
    },
    {
      name: 'check after release',
      call: async (ctx) => {
        const g = await ctx.client.lock(freshPath('check')).acquire()
        await g.release()
        return g.check()
      },
      expect: zkErr('NOT_HELD'),
    },
    {
      // No thread to go by in JavaScript: the write acquire is a contender
      // behind our own read node, so it waits until its timeout.
      name: 'a write acquire while holding the read side of the pair',
      call: async (ctx) => {
        const rw = ctx.client.readWriteLock(freshPath('upgrade'))
        const r = await rw.read.acquire()
        try {
          return await rw.write.acquire({ timeoutMs: 300 })
        } finally {
          await r.release()
        }
      },
      expect: zkErr('TIMEOUT'),
    },
    {
      name: 'downgrade() of a read guard',
      call: async (ctx) => {
        const rw = ctx.client.readWriteLock(freshPath('downgrade'))
        const r = await rw.read.acquire()
        try {
          return await r.downgrade()
        } finally {
          await r.release()
        }
      },
      expect: zkErr('INVALID_ARGUMENT'),
    },
    ...[
      ['a string', 'x'],
      ['a number', 5],
      ['null', null],
    ].map(([label, cb]) => ({
      name: `onStateChange(${label})`,
      call: async (ctx) => {
        const g = await ctx.client.lock(freshPath('cb')).acquire()
        try {
          return g.onStateChange(cb)
        } finally {
          await g.release()
        }
      },
      expect: typeErr(),
    })),
    {
      name: 'withLock(path, "not a function")',
      call: (ctx) => ctx.client.withLock(freshPath('w'), 'x'),
      expect: typeErr(),
    },
    ...[
      ['a string', '10'],
      ['a number', 10],
      ['true', true],
    ].map(([label, o]) => ({
      name: `acquire(${label})`,
      call: (ctx) => ctx.client.lock(freshPath('o')).acquire(o),
      expect: typeErr(),
    })),
    {
      name: 'acquire({ signal: {} })',
      call: (ctx) => ctx.client.lock(freshPath('s')).acquire({ signal: {} }),
      expect: typeErr(),
    },
    {
      name: 'acquire with a signal whose addEventListener throws: that error, and no acquire left running',
      call: async (ctx) => {
        const p = freshPath('fake-signal')
        const boom = new Error('addEventListener boom')
        const signal = {
          aborted: false,
          addEventListener() {
            throw boom
          },
          removeEventListener() {},
        }
        let thrown
        try {
          await ctx.client.lock(p).acquire({ signal })
        } catch (e) {
          thrown = e
        }
        // An acquire that went on regardless would hold the lock by now.
        await new Promise((r) => setTimeout(r, 300))
        const left = await ctx.client.participants(p)
        return { thrown, left: left.length }
      },
      expect: ok(
        "the listener's error and no node",
        (v) => v.thrown?.message === 'addEventListener boom' && v.left === 0,
      ),
    },
    // Wrong receivers, constructors.
    {
      name: 'Lock.prototype.acquire on a plain object',
      call: () => Lock.prototype.acquire.call({}),
      expect: typeErr('ERR_INVALID_THIS'),
    },
    {
      name: 'Client.prototype.lock on null',
      call: () => Client.prototype.lock.call(null, '/a'),
      expect: typeErr('ERR_INVALID_THIS'),
    },
    ...[
      [Lock, 'path'],
      [Lock, 'held'],
      [Guard, 'state'],
      [Guard, 'fencingToken'],
      [Client, 'closed'],
    ].map(([cls, key]) => ({
      name: `getter ${cls.name}.${key} on a plain object`,
      call: () => Object.getOwnPropertyDescriptor(cls.prototype, key).get.call({}),
      expect: typeErr('ERR_INVALID_THIS'),
    })),
    ...[Client, Lock, Guard].map((cls) => ({
      name: `new ${cls.name}()`,
      call: () => new cls(),
      expect: typeErr('ERR_ILLEGAL_CONSTRUCTOR'),
    })),
  ]

  // Unknown option keys (a misspelling) in every options object the API
  // takes: INVALID_ARGUMENT at once, naming the key and the valid ones
  // (they were ignored: `timeoutMS` waited without limit).
  const CONNECT_KEYS =
    'valid options: hosts, sessionTimeoutMs, connectTimeoutMs, operationTimeoutMs, auth, sasl, acl, tls'
  const ACQUIRE_KEYS = 'valid options: timeoutMs, signal'
  const unknown = (name, key, valid, call) => ({
    name: `unknown option: ${name}`,
    call,
    expect: zkErr('INVALID_ARGUMENT'),
    message: [`unknown option ${JSON.stringify(key)}`, valid],
  })
  g.unknownOptions = [
    unknown('connect sesionTimeoutMs', 'sesionTimeoutMs', CONNECT_KEYS, (ctx) =>
      Client.connect({ hosts: ctx.hosts, sesionTimeoutMs: 30000 }),
    ),
    unknown('connect timeoutMs', 'timeoutMs', CONNECT_KEYS, (ctx) =>
      Client.connect({ hosts: ctx.hosts, timeoutMs: 1 }),
    ),
    unknown('connect host (no hosts)', 'host', CONNECT_KEYS, (ctx) => Client.connect({ host: ctx.hosts })),
    unknown('connect with an undefined value', 'operationTimeoutMS', CONNECT_KEYS, (ctx) =>
      Client.connect({ hosts: ctx.hosts, operationTimeoutMS: undefined }),
    ),
    unknown('connect auth.pasword', 'pasword', 'valid options: user, password', (ctx) =>
      Client.connect({ hosts: ctx.hosts, auth: { user: 'u', password: 'p', pasword: 'p' } }),
    ),
    unknown('connect sasl.username', 'username', 'valid options: user, password', (ctx) =>
      Client.connect({ hosts: ctx.hosts, sasl: { username: 'u', password: 'p' } }),
    ),
    unknown('connect tls.certificate', 'certificate', 'valid options: ca, cert, key', (ctx) =>
      Client.connect({ hosts: ctx.hosts, tls: { ca: '/nonexistent/ca.pem', certificate: 'c.pem' } }),
    ),
    // On a held lock: an ignored key would wait without limit.
    unknown('lock acquire timeoutMS', 'timeoutMS', ACQUIRE_KEYS, (ctx) =>
      ctx.client.lock(ctx.heldPath).acquire({ timeoutMS: 100 }),
    ),
    unknown('lock acquire timeout', 'timeout', ACQUIRE_KEYS, (ctx) =>
      ctx.client.lock(ctx.heldPath).acquire({ timeoutMs: 100, timeout: 100 }),
    ),
    unknown('lock acquire abortSignal', 'abortSignal', ACQUIRE_KEYS, (ctx) =>
      ctx.client.lock(ctx.heldPath).acquire({ abortSignal: AbortSignal.timeout(100) }),
    ),
    unknown('read side acquire timeoutMS', 'timeoutMS', ACQUIRE_KEYS, (ctx) =>
      ctx.client.readWriteLock(freshPath('rw')).read.acquire({ timeoutMS: 100 }),
    ),
    unknown('write lock acquire timeoutMS', 'timeoutMS', ACQUIRE_KEYS, (ctx) =>
      ctx.client.writeLock(freshPath('w')).acquire({ timeoutMS: 100 }),
    ),
    unknown('election acquire timeoutMS', 'timeoutMS', ACQUIRE_KEYS, (ctx) =>
      ctx.client.election(freshPath('e'), 'me').acquire({ timeoutMS: 100 }),
    ),
    unknown('semaphore acquire timeoutMS', 'timeoutMS', ACQUIRE_KEYS, (ctx) =>
      ctx.client.semaphore(freshPath('s'), 2).acquire({ timeoutMS: 100 }),
    ),
    unknown('multiLock acquire timeoutMS', 'timeoutMS', ACQUIRE_KEYS, (ctx) =>
      ctx.client.multiLock([{ path: ctx.heldPath }, { path: freshPath('m') }]).acquire({ timeoutMS: 100 }),
    ),
    unknown('multiLock member mod', 'mod', 'valid options: path, mode', (ctx) =>
      ctx.client.multiLock([{ path: freshPath('m') }, { path: freshPath('m'), mod: 'READ' }]),
    ),
    unknown('withLock timeoutMS', 'timeoutMS', ACQUIRE_KEYS, (ctx) =>
      ctx.client.withLock(ctx.heldPath, () => 'ran', { timeoutMS: 100 }),
    ),
    unknown('withLeadership timeoutMS', 'timeoutMS', ACQUIRE_KEYS, (ctx) =>
      ctx.client.withLeadership(freshPath('l'), 'me', () => 'ran', { timeoutMS: 100 }),
    ),
    {
      name: 'unknown option: none, with undefined values (control: granted)',
      call: (ctx) => ctx.client.lock(freshPath('known')).acquire({ timeoutMs: undefined, signal: undefined }),
      expect: isGuard,
    },
    {
      name: 'unknown option: none, a multiLock member with its mode (control: a MultiLock)',
      call: (ctx) => ctx.client.multiLock([{ path: freshPath('m'), mode: 'READ' }]),
      expect: ok('a MultiLock', (v) => v instanceof zklock.MultiLock),
    },
  ]

  // A panic in the addon (a bug) must end as INTERNAL, never abort: a test
  // hook panics on purpose in a synchronous call and in a Promise's work.
  g.panics = ['sync', 'promise'].map((place) => ({
    name: `a panic in the addon (${place})`,
    call: () => testBuild().__panicForTest(place),
    expect: zkErr('INTERNAL'),
  }))
  return g
}

// --- context, running and checking ----------------------------------------------

/**
 * What the cases need: a live client, a path held by another client, and a
 * closed client with a lock handle and guards from before the close.
 * Clients come from `connect()` (default: Client.connect; `dispose()`
 * closes those).
 */
async function makeContext(hosts, connect) {
  const clients = []
  connect ??= async () => {
    const c = await Client.connect({ hosts })
    clients.push(c)
    return c
  }
  const client = await connect()
  const holder = await connect()
  const heldPath = freshPath('held')
  // Kept referenced: a guard that is garbage collected is released.
  const heldGuard = await holder.lock(heldPath).acquire()
  const closedClient = await connect()
  const lock = closedClient.lock(freshPath('closed'))
  const guard = await lock.acquire()
  const guard2 = await closedClient.lock(freshPath('closed2')).acquire()
  await closedClient.close()
  return {
    hosts,
    client,
    heldPath,
    heldGuard,
    /** A new client, for a case that may break its connection. */
    isolatedClient: connect,
    closed: { client: closedClient, lock, guard, guard2 },
    async dispose() {
      for (const c of clients) await c.close().catch(() => {})
    },
  }
}

/**
 * Runs one case: its outcome (`value`, `error` or `hung`), how long it took
 * (`ms`) and, if the case has an `expect`, `failure`: null when the outcome
 * is what the case expects, else why not (see check()). Then a value that
 * holds something (a Client, a Guard) is closed or released.
 */
async function run(c, ctx) {
  const t0 = performance.now()
  let timer
  const outcome = (async () => {
    try {
      return { value: await c.call(ctx) }
    } catch (error) {
      return { error }
    }
  })()
  const hung = new Promise((resolve) => {
    timer = setTimeout(() => resolve({ hung: true }), BOUND_MS)
  })
  const r = await Promise.race([outcome, hung])
  clearTimeout(timer)
  r.ms = Math.round(performance.now() - t0)
  r.failure = c.expect ? check(c, r) : null
  if (r.value instanceof Client) await r.value.close().catch(() => {})
  if (r.value instanceof Guard) await r.value.release().catch(() => {})
  return r
}

function describe(r) {
  if (r.hung) return `no outcome within ${BOUND_MS} ms`
  if ('error' in r) {
    const e = r.error
    if (e === null || typeof e !== 'object') return `threw ${String(e)}`
    const msg = String(e.message)
    return `${e.constructor?.name ?? 'Object'} code=${e.code} "${msg.length > 160 ? msg.slice(0, 160) + '...' : msg}"`
  }
  const v = r.value
  return `value ${v === null || typeof v !== 'object' ? String(v) : (v.constructor?.name ?? 'Object')}`
}

/** null when `r` is what case `c` expects, else why not. */
function check(c, r) {
  const got = `got ${describe(r)} after ${r.ms} ms`
  if (r.hung) return got
  if (r.ms > BOUND_MS) return `took longer than ${BOUND_MS} ms: ${got}`
  const x = c.expect
  if (x.kind === 'ok') return !('error' in r) && x.pred(r.value) ? null : `expected ${x.what}, ${got}`
  if (!('error' in r)) return `expected an error, ${got}`
  const e = r.error
  if (x.kind === 'zk') {
    if (!(e instanceof ZkLockError) || !x.codes.includes(e.code))
      return `expected ZkLockError ${x.codes.join(' or ')}, ${got}`
    for (const m of [].concat(c.message ?? [])) {
      if (!String(e.message).includes(m)) return `expected the message to name ${m}, ${got}`
    }
    return null
  }
  if (!(e instanceof TypeError) || e.code !== x.code) return `expected TypeError ${x.code}, ${got}`
  return null
}

module.exports = { BOUND_MS, groups, makeContext, run, check, describe, freshPath }
