// The ESM entry of the zklock package (`import { Client } from 'zklock'`):
// the CommonJS module's exports under their names (Node cannot find every
// name of a CommonJS module by itself), and the module as the default.
import zklock from './index.js'

export const {
  Client,
  setLogger,
  Subscription,
  Lock,
  Guard,
  MultiLock,
  MultiGuard,
  ZkLockError,
  ERROR_CODES,
  errorCodes,
} = zklock
export default zklock
