// pg-fencing as an ES module: the CommonJS implementation (index.js), each of
// its exports by name. test/esm.mjs checks that this list is module.exports'.
import fencing from './index.js';

export const {
  MAX_TOKEN, StaleTokenError, TokenRequiredError, LeaseLostError, LeaseClosedError,
  LeaseTakenOverError, LeaseNotAcquiredError, TransactionAbortedError, TransactionInProgressError, Lease, acquire,
  tryAcquire, acquireAll, withLease, withToken, fencedUpdate, fencedDelete, fencedUpsert, check,
  connect, register, tokenOids, typesFor, typedError, parseStaleDetail, tokenText, parseToken,
  parseTokenArray, sleep,
} = fencing;
export default fencing;
