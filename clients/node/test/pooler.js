// The lease path behind a PgBouncer in transaction pooling with node-postgres'
// defaults (test.sh runs it behind Debian 12's 1.18 and Debian 13's 1.24):
// acquire, renewals past 4 TTLs, lease.transaction(), a stale write refused as
// StaleTokenError with its fields, a takeover (TF003 when the library is
// preloaded, else 57P01) as LeaseTakenOverError, no session state left.
//   node test/pooler.js PORT DATABASE LABEL   (the direct connection from PG* variables)
'use strict';
const pg = require('pg');
const fencing = require('..');

const [port, database, label] = process.argv.slice(2);
const pooled = { host: '127.0.0.1', port: Number(port), user: 'postgres', database };
const RUN = process.pid;
let n = 0;
let failed = 0;
function ok(cond, what, got) {
  n += 1;
  if (!cond) failed += 1;
  console.log(`${cond ? 'ok' : 'not ok'} ${n} - ${label}: ${what}${cond ? '' : `  # got ${JSON.stringify(got)}`}`);
}

async function main() {
  const admin = new pg.Client({});
  await admin.connect();
  const preloaded = (await admin.query('SHOW shared_preload_libraries')).rows[0].shared_preload_libraries.includes('fencing');
  await admin.query('DROP TABLE IF EXISTS pl_rows');
  await admin.query('CREATE TABLE pl_rows (id int PRIMARY KEY, res text NOT NULL, v text, fence fencing_token)');
  await admin.query("SELECT fencing_protect('pl_rows', scope => 'resource', resource_column => 'res')");
  await fencing.withToken(admin, 1n, (c) => c.query('INSERT INTO pl_rows VALUES (1, $1, $3), (2, $2, $3)',
    [`pl-a-${RUN}`, `pl-t-${RUN}`, 'a']));
  const value = async (i) => (await admin.query('SELECT v FROM pl_rows WHERE id = $1', [i])).rows[0].v;

  const lease = await fencing.acquire(pooled, { resource: `pl-a-${RUN}`, holder: 'a', ttl: 1500 });
  ok(lease.state === 'held', 'acquire through the pooler', lease.state);
  await fencing.sleep(6000);
  ok(lease.state === 'held' && !lease.isLost, 'renewals through the pooler keep the lease past 4 TTLs',
    { state: lease.state, lost: lease.lostReason });
  const app = await fencing.connect(pooled);
  app.on('error', () => {});
  await lease.transaction(app, (c) => c.query("UPDATE pl_rows SET v = 'helper' WHERE id = 1"));
  ok(await value(1) === 'helper', 'lease.transaction() writes through the pooler', await value(1));
  const higher = BigInt(lease.token) + 1000n;
  await fencing.withToken(admin, higher, (c) => c.query("UPDATE pl_rows SET v = 'newer' WHERE id = 1"));
  let err = null;
  try {
    await lease.transaction(app, (c) => c.query("UPDATE pl_rows SET v = 'stale' WHERE id = 1"));
  } catch (e) {
    err = e;
  }
  ok(err instanceof fencing.StaleTokenError && BigInt(err.offered) === BigInt(lease.token)
    && BigInt(err.hwm) === higher && err.table === 'pl_rows' && await value(1) === 'newer',
  'a stale write through the pooler: StaleTokenError with offered, hwm and table',
  { err: err && `${err.name} ${err.offered} ${err.hwm} ${err.table}`, v: await value(1) });
  await lease.release();

  // takeover: the lease released behind the holder's back, another acquire ends its write
  const l2 = await fencing.acquire(pooled, { resource: `pl-t-${RUN}`, holder: 'a', ttl: 3000 });
  const done = l2.transaction(app, async (c) => {
    await c.query("UPDATE pl_rows SET v = 'cut-off' WHERE id = 2");
    await c.query('SELECT pg_sleep(10)');
  }).then(() => null, (e) => e);
  for (let i = 0; i < 250; i++) {
    const r = await admin.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(10)' AND state = 'active'");
    if (r.rows[0].n > 0) break;
    await fencing.sleep(20);
  }
  await admin.query('SELECT fencing_release($1, $2::text::fencing_token)', [`pl-t-${RUN}`, String(l2.token)]);
  for (let i = 0; i < 250 && !l2.isLost; i++) await fencing.sleep(20);
  await admin.query("SELECT fencing_acquire($1, 'other', '30 s', '5 s')", [`pl-t-${RUN}`]);
  const e = await done;
  ok(e instanceof fencing.LeaseTakenOverError && e.sqlstate === (preloaded ? 'TF003' : '57P01') && await value(2) === 'a',
    `a takeover through the pooler (${preloaded ? 'preloaded: TF003' : 'not preloaded: 57P01'}) is LeaseTakenOverError; the write rolled back`,
    { e: e && `${e.name} ${e.sqlstate} ${e.message}`, v: await value(2) });
  await l2.release().catch(() => {});
  await app.end().catch(() => {});

  const c = new pg.Client(pooled);
  await c.connect();
  const seen = new Set();
  for (let i = 0; i < 6; i++) {
    const r = await c.query("SELECT current_setting('statement_timeout') AS st, coalesce(current_setting('fencing.token', true), '') AS tok,"
      + " (SELECT count(*) FROM pg_prepared_statements WHERE name NOT LIKE 'PGBOUNCER%')::int AS ps");
    seen.add(JSON.stringify(r.rows[0]));
  }
  await c.end();
  ok(seen.size === 1 && seen.has(JSON.stringify({ st: '0', tok: '', ps: 0 })),
    'no statement_timeout, fencing.token or client prepared statement left on the server connections', [...seen]);
  await admin.query('DROP TABLE pl_rows');
  await admin.end();
}

main().then(() => process.exit(failed ? 1 : 0), (e) => {
  console.log(`not ok ${n + 1} - ${label}: ${e.stack}`);
  process.exit(1);
});
