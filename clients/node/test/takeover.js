// Takeover (clients/CONTRACT.md section 4a): a write under a lease cut off by
// another holder's acquire. The suite's cluster does not preload the library,
// so the server sends 57P01; TF003 is checked on the classification here and
// end to end by the conformance suite. Run by test/run.js.
'use strict';
const fencing = require('..');

module.exports = function takeoverTests({ ok, caught, RUN }) {
  async function resourceTable(app, t, resource) {
    await app.query(`DROP TABLE IF EXISTS ${t}`);
    await app.query(`CREATE TABLE ${t} (id int PRIMARY KEY, res text NOT NULL, v text, fence fencing_token)`);
    await app.query("SELECT fencing_protect($1, scope => 'resource', resource_column => 'res')", [t]);
    await fencing.withToken(app, 1n, (c) => c.query(`INSERT INTO ${t} VALUES (1, $1, 'a')`, [resource]));
  }

  // A lease on a resource of its own with row 1 of a resource-scope table on
  // it, and a write under the lease sleeping in the server after its UPDATE
  // (done resolves to the write's error).
  async function writing(app, kind) {
    const resource = `tk-${kind}-${RUN}`;
    const t = `tk_${kind}_${process.pid}`;
    await resourceTable(app, t, resource);
    const lease = await fencing.acquire({}, { resource, holder: 'a', ttl: 3000 });
    return { resource, t, lease, done: (await writeSleeping(app, lease, t)).promise };
  }

  // A write under the lease sleeping in the server after its UPDATE; resolves to its error.
  async function writeSleeping(app, lease, t) {
    const client = await fencing.connect({});
    client.on('error', () => {});
    const done = caught(() => lease.transaction(client, async (c) => {
      await c.query(`UPDATE ${t} SET v = 'cut-off' WHERE id = 1`);
      await c.query('SELECT pg_sleep(10)');
    })).finally(() => client.end().catch(() => {}));
    for (let i = 0; i < 250; i++) {
      const r = await app.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(10)' AND state = 'active'");
      if (r.rows[0].n > 0) break;
      await fencing.sleep(20);
    }
    return { promise: done }; // wrapped: an async function returning it would wait for the write
  }

  // TF003 loses the lease with reason takeover; 57P01 on a held lease is not a takeover.
  async function testTakeoverClassification() {
    const lease = await fencing.acquire({}, { resource: `tk-class-${RUN}`, holder: 'a', ttl: 5000 });
    let reason = null;
    lease.on('lost', (e) => { reason = e.reason; });
    const plain = lease.takenOver({ code: '57P01' });
    const held = lease.state;
    const e = lease.takenOver({ code: 'TF003' });
    ok(plain === null && held === 'held' && e instanceof fencing.LeaseTakenOverError && e instanceof fencing.LeaseLostError
      && e.reason === 'takeover' && e.sqlstate === 'TF003' && reason === 'takeover' && lease.lostReason === 'takeover',
    'takeover: 57P01 on a held lease is not a takeover; TF003 is LeaseTakenOverError (a LeaseLostError) and the lost signal says takeover',
    { plain, held, e: e && e.name, reason });
    await lease.release();
  }

  // Released behind the holder's back; once a renewal saw it (refused), another
  // holder's acquire ends the write (57P01): LeaseTakenOverError, nothing commits.
  async function testTakeoverAfterLost(app) {
    const { resource, t, lease, done } = await writing(app, 'lost');
    await app.query('SELECT fencing_release($1, $2::text::fencing_token)', [resource, String(lease.token)]);
    for (let i = 0; i < 150 && !lease.isLost; i++) await fencing.sleep(20);
    const r = await app.query("SELECT fencing_acquire($1, 'other', '30 s', '5 s')::text AS t", [resource]);
    const e = await done;
    const row = (await app.query(`SELECT v FROM ${t} WHERE id = 1`)).rows[0];
    ok(r.rows[0].t !== null && e instanceof fencing.LeaseTakenOverError && e instanceof fencing.LeaseLostError
      && e.sqlstate === '57P01' && lease.lostReason === 'refused' && row.v === 'a',
    'takeover: a write ended (57P01) after the lease was lost is LeaseTakenOverError; the lost reason stays refused; nothing committed',
    { token2: r.rows[0].t, e: e && `${e.name} ${e.code} ${e.message}`, lostReason: lease.lostReason, row });
    await lease.release();
  }

  // pg_terminate_backend (57P01, as a shutdown) of a held lease's write is the driver's error; the lease stays held.
  async function testTerminatedWhileHeld(app) {
    const { lease, done } = await writing(app, 'held');
    await app.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(10)' AND state = 'active'");
    const e = await done;
    await fencing.sleep(1500);
    ok(e && e.code === '57P01' && !(e instanceof fencing.LeaseLostError) && lease.state === 'held',
      'takeover: a held lease\'s write ended by pg_terminate_backend is the driver\'s 57P01, not a takeover; the lease stays held',
      { e: e && `${e.name} ${e.code}`, state: lease.state });
    await lease.release();
  }

  if (process.env.TEST_LABEL) return [testTakeoverClassification];
  return [testTakeoverClassification, testTakeoverAfterLost, testTerminatedWhileHeld];
};
