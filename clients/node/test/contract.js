// The contract's findings for pg-fencing (clients/CONTRACT.md), each a test
// that failed on the 1.5 library: run by test/run.js.
'use strict';
const pg = require('pg');
const fencing = require('..');

module.exports = function contractTests({ ok, caught, leaseRow, RUN }) {
  // A lease that waited for its predecessor is not declared lost early: the
  // server granted it a full TTL from the grant, after the wait.
  async function testWaitedAcquire(app) {
    const resource = `waited-${RUN}`;
    const ttl = 3000;
    const a = await fencing.acquire({}, { resource, holder: 'a', ttl });
    setTimeout(() => { a.release(); }, 2500);
    let lostAt = null;
    const t0 = performance.now();
    const b = await fencing.acquire({}, { resource, holder: 'b', ttl, wait: 10000, onLost: () => { lostAt = performance.now(); } });
    const waited = performance.now() - t0;
    await fencing.sleep(2500);
    const row = await leaseRow(app, resource);
    ok(waited >= 2300 && lostAt === null && !b.isLost && row.live === true && row.token === b.token,
      `a lease that waited ${(waited / 1000).toFixed(2)} s of its 3 s TTL is not declared lost while the server renews it`,
      { waited, lostAfterAcquire: lostAt === null ? null : lostAt - t0 - waited, isLost: b.isLost, row });
    await b.release();
  }

  // release() is not "lost": the lost signal stays quiet, the state is closed,
  // and a transaction under it is refused with LeaseClosedError.
  async function testReleaseNotLost(app) {
    const resource = `closed-${RUN}`;
    let lostFired = false;
    const lease = await fencing.acquire({}, { resource, holder: 'c', ttl: 5000 });
    lease.on('lost', () => { lostFired = true; });
    lease.lost.addEventListener('abort', () => { lostFired = true; });
    const released = await lease.release();
    await fencing.sleep(50);
    ok(released === true && !lostFired && !lease.lost.aborted && lease.state === 'closed' && lease.isClosed && !lease.isLost,
      'release(): the lost signal does not fire; state closed', { released, lostFired, state: lease.state });
    const e = await caught(() => lease.transaction(app, (c) => c.query('SELECT 1')));
    ok(e instanceof fencing.LeaseClosedError && !(e instanceof fencing.LeaseLostError),
      'a transaction under a released lease: LeaseClosedError (not LeaseLostError)', e && e.name);
    ok(await lease.release() === false, 'a second release() returns false');
  }

  // No session-level setting on any connection of the lease: behind a pooler
  // it would stay on the server connection and reach other applications.
  async function testNoSessionState(app) {
    const resource = `session-${RUN}`;
    let leaseConn = null;
    const lease = await fencing.acquire(() => { leaseConn = new pg.Client({}); return leaseConn; },
      { resource, holder: 's', ttl: 1500, wait: 100 });
    await fencing.sleep(1200); // renewals ran
    const st = await leaseConn.query('SHOW statement_timeout');
    ok(st.rows[0].statement_timeout === '0' && lease.renewals >= 1,
      `the lease's connection has no session statement_timeout after acquire and ${lease.renewals} renewals`, st.rows[0]);
    await lease.release();
  }

  // withToken on a pool client inside the caller's open transaction: refused,
  // and the caller's transaction is not committed.
  async function testCallersTransaction(app) {
    const t = `callers_tx_${process.pid}`;
    await app.query(`DROP TABLE IF EXISTS ${t}`);
    await app.query(`CREATE TABLE ${t} (id int PRIMARY KEY, v text)`);
    const pool = new pg.Pool({ max: 1 });
    const pc = await pool.connect();
    await pc.query('BEGIN');
    await pc.query(`INSERT INTO ${t} VALUES (1, 'callers')`);
    const e = await caught(() => fencing.withToken(pc, 5n, (c) => c.query('SELECT 1')));
    await pc.query('ROLLBACK');
    const r = await app.query(`SELECT count(*)::int AS n FROM ${t}`);
    ok(e instanceof fencing.TransactionInProgressError && r.rows[0].n === 0,
      "withToken on a pool client inside the caller's transaction: TransactionInProgressError, the caller's transaction not committed",
      { error: e && e.name, rowsAfterCallersRollback: r.rows[0].n });
    const w = await fencing.withToken(pc, 5n, (c) => c.query(`INSERT INTO ${t} VALUES (2, 'ours')`));
    ok(w.rowCount === 1, 'withToken on the same pool client once idle commits its own transaction');
    pc.release();
    await pool.end();
    await app.query(`DROP TABLE ${t}`);
  }

  return [testWaitedAcquire, testReleaseNotLost, testNoSessionState, testCallersTransaction];
};
