// Type-checked by `tsc --noEmit -p test/tsconfig.json` (make test-node);
// never run. It uses the whole public API as a TypeScript user would.

import { type OpenMetricsContentType, Registry } from 'prom-client'
import {
  Client,
  type ConnectionState,
  type CreateMode,
  ERROR_CODES,
  type FailedOp,
  type FencedOp,
  type FencedResult,
  type Guard,
  type Lock,
  type LockMode,
  type LockState,
  type Metrics,
  type MultiGuard,
  type NodeKind,
  type Participant,
  type ReleaseStatus,
  ZkLockError,
  type ZkLockErrorCode,
} from '..'
import { METRIC_NAMES, type Registration, registerClient } from '../metrics'

async function usage(): Promise<bigint> {
  const client: Client = await Client.connect({
    hosts: '127.0.0.1:2181',
    sessionTimeoutMs: 2000,
    connectTimeoutMs: 5000,
    operationTimeoutMs: 2000,
  })
  const lock: Lock = client.lock('/jobs/nightly')
  const ac = new AbortController()
  const guard: Guard = await lock.acquire({ timeoutMs: 10_000, signal: ac.signal })
  guard.onStateChange((state: LockState) => {
    if (state === 'LOST') console.error('lost')
  })
  guard.check()
  const token: bigint = guard.fencingToken
  const node: string = guard.nodePath
  const status: ReleaseStatus = await guard.release()
  const mode: LockMode = lock.mode
  const created: CreateMode = 'EPHEMERAL'
  client.onConnectionState((change: ConnectionState) => console.log(change === 'SUSPENDED', mode, created))
  const maybe: Guard | null = await lock.tryAcquire()
  if (maybe) await maybe[Symbol.asyncDispose]()
  const { read, write } = client.readWriteLock('/config')
  const r = await read.acquire()
  await r.release()
  await write.acquire({ timeoutMs: 0 }).then((g) => g.release())
  const n: number = await client.withLock('/jobs/x', async (g) => Number(g.sequence), { timeoutMs: 100 })
  const parts: Participant[] = await client.participants('/jobs/nightly')
  const kinds: NodeKind[] = parts.map((p) => p.kind)
  const sid: bigint = client.sessionId()
  client.setHosts('127.0.0.1:2181,127.0.0.1:2182')
  const revoked: boolean = await client.revoke(guard.nodePath)
  const revocation = guard.onRevocation(() => console.log('asked to let go', guard.revocationRequested))
  revocation.cancel()
  const metrics: Metrics = client.metrics()
  const creates: number = metrics.requests.create2 ?? 0
  const waited: number = metrics.waitTime.buckets[0].le + metrics.waitTime.sumSeconds + metrics.acquiresGranted
  void [revoked, creates, waited, kinds]
  try {
    await lock.acquire({ timeoutMs: 1 })
  } catch (e) {
    if (e instanceof ZkLockError) {
      const code: ZkLockErrorCode = e.code
      console.log(code === 'TIMEOUT', ERROR_CODES.includes(code))
    }
  }
  await client.close()
  void [token, node, status, n, parts, sid, lock.path, lock.mode, lock.held, client.closed]
  return token
}
void usage

async function scoped(client: Client): Promise<void> {
  await using guard = await client.lock('/jobs/scoped').acquire()
  guard.check()
}
void scoped

async function fenced(guard: Guard, multi: MultiGuard): Promise<number | undefined> {
  const ops: FencedOp[] = [
    { op: 'CREATE', path: '/jobs/state', data: 'v0', mode: 'PERSISTENT' },
    { op: 'CREATE', path: '/jobs/state/e-', data: Buffer.from('x'), mode: 'EPHEMERAL_SEQUENTIAL' },
    { op: 'SET_DATA', path: '/jobs/state', data: 'v1', version: 0 },
    { op: 'DELETE', path: '/jobs/state/x' },
    { op: 'CHECK', path: '/jobs/state', version: 1 },
  ]
  const results: FencedResult[] = await guard.fencedMulti(ops)
  const created: string | undefined = (await multi.fencedMulti(ops))[0].path
  try {
    await guard.fencedMulti([{ op: 'CHECK', path: '/jobs/state' }])
  } catch (e) {
    if (e instanceof ZkLockError && e.failedOp) {
      const failed: FailedOp = e.failedOp
      console.log(failed.index + 1, failed.code.length, created)
    }
  }
  return results[2].version
}
void fenced

async function prometheus(client: Client, other: Client): Promise<string> {
  const registry = new Registry()
  const registration: Registration = registerClient(client, { registry, labels: { client: 'orders' } })
  registerClient(other, { registry: new Registry<OpenMetricsContentType>() })
  registerClient(other)
  const text = await registry.metrics()
  registration.unregister()
  const first: string = METRIC_NAMES[0]
  return text + first
}
void prometheus
