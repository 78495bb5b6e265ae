// The paused holder of test/run.js: acquires a lease, writes under it, says
// "ready" and waits on stdin. The parent SIGSTOPs it past the TTL, lets another
// holder take the lease and write, SIGCONTs it and writes "go": it then
// reports whether its lost signal fired, and tries its late writes, one
// through its lease (LeaseLostError expected) and one with the raw token
// straight to the server (StaleTokenError expected), as JSON lines.
'use strict';
const readline = require('readline');
const fencing = require('..');

function say(obj) {
  process.stdout.write(`${JSON.stringify(obj, (k, v) => (typeof v === 'bigint' ? v.toString() : v))}\n`);
}

function errorFields(err) {
  return { name: err.name, code: err.code, schema: err.schema, table: err.table, key: err.key,
    offered: err.offered, hwm: err.hwm, strict: err.strict, instanceofError: err instanceof Error,
    stale: err instanceof fencing.StaleTokenError, leaseLost: err instanceof fencing.LeaseLostError,
    message: err.message };
}

async function main() {
  const [resource, table, ttl] = [process.argv[2], process.argv[3], Number(process.argv[4])];
  const app = await fencing.connect({});
  const lease = await fencing.acquire({}, { resource, holder: 'paused-holder', ttl });
  let lostAt = null;
  lease.on('lost', () => { lostAt = Date.now(); });
  await lease.transaction(app, (c) => c.query(`UPDATE ${table} SET v = 'paused-holder' WHERE id = 1`));
  say({ ready: true, token: lease.token, pid: process.pid });
  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (line !== 'go') continue;
    // The timers that came due during the pause have run by now or run
    // within one turn; give the renewal's round trip a moment.
    await fencing.sleep(200);
    say({ lost: lease.lost.aborted, lostAt, reason: lease.lostReason, resumedAt: Date.now() });
    try {
      await lease.transaction(app, (c) => c.query(`UPDATE ${table} SET v = 'late-through-lease' WHERE id = 1`));
      say({ viaLease: 'written' });
    } catch (err) {
      say({ viaLease: errorFields(err) });
    }
    try {
      await fencing.withToken(app, lease.token, (c) => c.query(`UPDATE ${table} SET v = 'late-raw' WHERE id = 1`));
      say({ raw: 'written' });
    } catch (err) {
      say({ raw: errorFields(err) });
    }
    break;
  }
  await lease.release();
  await app.end();
  process.exit(0);
}

main().catch((err) => { say({ fatal: `${err.name}: ${err.message}` }); process.exit(1); });
