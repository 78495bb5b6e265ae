// The conformance agent for pg-fencing (node-postgres): the line protocol of
// clients/conformance/PROTOCOL.md on stdin/stdout.
'use strict';
const path = require('path');
const readline = require('readline');

// CONFORMANCE_NODE_LIB: an installed pg-fencing (agents/node_current) instead of this tree's.
const LIB = process.env.CONFORMANCE_NODE_LIB || path.resolve(__dirname, '../../../node');
const fencing = require(LIB);
const pgVersion = require(require.resolve('pg/package.json', { paths: [LIB] })).version;
const libVersion = require(path.join(LIB, 'package.json')).version;

function emit(msg) {
  process.stdout.write(JSON.stringify(msg) + '\n');
}

const KINDS = [
  [fencing.LeaseTakenOverError, 'LeaseTakenOver'], [fencing.LeaseLostError, 'LeaseLost'], [fencing.LeaseClosedError, 'LeaseClosed'],
  [fencing.LeaseNotAcquiredError, 'LeaseNotAcquired'], [fencing.StaleTokenError, 'StaleToken'],
  [fencing.TokenRequiredError, 'TokenRequired'], [fencing.TransactionAbortedError, 'TransactionAborted'],
  [fencing.TransactionInProgressError, 'TransactionInProgress'],
];

function errorOf(e) {
  const found = KINDS.find(([cls]) => cls && e instanceof cls);
  let kind = found ? found[1] : (e && typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) ? 'Database' : 'Other');
  if (kind === 'Database' && e.code === '55000' && e.hint) kind = 'ExtensionTooOld';
  const fields = {};
  if (kind === 'StaleToken') {
    for (const k of ['schema', 'table', 'offered', 'hwm']) fields[k] = e[k] === null || e[k] === undefined ? null : String(e[k]);
    fields.key = typeof e.key === 'string' || e.key === null ? e.key : JSON.stringify(e.key);
    fields.strict = e.strict;
  }
  const code = e && e.code && /^[0-9A-Z]{5}$/.test(e.code) ? e.code : null;
  return { kind, sqlstate: (e && e.sqlstate) || code, message: String(e && e.message), fields };
}

const leases = new Map();
let app = null;

const commands = {
  async hello() {
    return { lang: 'node', library: `pg-fencing ${libVersion}`, driver: `pg ${pgVersion}`, pid: process.pid };
  },
  async reconnect() {
    if (app) await app.end().catch(() => {});
    app = await fencing.connect({});
    app.on('error', () => {});
    return {};
  },
  async acquire(m) {
    const sentAt = Date.now() / 1000;
    const opts = { resource: m.resource, holder: m.holder, ttl: m.ttl_ms, namespace: m.namespace };
    if (m.wait_ms !== null && m.wait_ms !== undefined) opts.wait = m.wait_ms;
    if (m.renew_every_ms) opts.renewEvery = m.renew_every_ms;
    if (m.margin_ms) opts.safety = m.margin_ms;
    opts.onLost = (err) => emit({ event: 'lost', lease: m.lease, reason: err.reason, at: Date.now() / 1000, token: String(err.tokens[0]) });
    const lease = await fencing.Lease.acquire({}, opts);
    leases.set(m.lease, lease);
    return { token: String(lease.token), sent_at: sentAt, returned_at: Date.now() / 1000 };
  },
  async state(m) {
    const l = leases.get(m.lease);
    const state = l.state;
    return { state, lost: l.isLost, closed: l.isClosed, reason: l.lostReason, token: String(l.token) };
  },
  async write(m) {
    const l = leases.get(m.lease);
    const r = await l.transaction(app, async (c) => {
      const u = await c.query(`UPDATE ${m.table} SET v = $1, n = n + 1 WHERE id = $2`, [m.value, m.row]);
      if (m.hold_ms) await fencing.sleep(m.hold_ms);
      if (m.hold_server_ms) await c.query('SELECT pg_sleep($1)', [m.hold_server_ms / 1000]);
      return u;
    });
    return { rows: r.rowCount };
  },
  async fenced_update(m) {
    const token = m.lease !== undefined ? leases.get(m.lease) : BigInt(m.token);
    return { rows: await fencing.fencedUpdate(app, m.table, token, { id: m.row }, { v: m.value }) };
  },
  async release(m) {
    return { released: await leases.get(m.lease).release() };
  },
  async close(m) {
    await leases.get(m.lease).close();
    return { released: null };
  },
};

async function main() {
  await commands.reconnect();
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    const m = JSON.parse(line);
    if (m.cmd === 'quit') {
      emit({ id: m.id, ok: true });
      break;
    }
    try {
      const result = await commands[m.cmd](m);
      emit({ ...result, id: m.id, ok: true });
    } catch (e) {
      emit({ id: m.id, ok: false, error: errorOf(e) });
    }
  }
  for (const l of leases.values()) await l.close().catch(() => {});
  if (app) await app.end().catch(() => {});
  process.exit(0);
}
main().catch((e) => { console.error(e); process.exit(1); });
