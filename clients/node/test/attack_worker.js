// One worker of test/pooler/attack124.py's attack pass (ATTACK_WORKER="node
// clients/node/test/attack_worker.js"): takes turns on one lease through the
// pooler and writes under it, as attack124.py's Python worker does, until
// END_EPOCH; prints one event a line (token, write, lost, error).
//   node attack_worker.js HOST PORT DBNAME USER RESOURCE WORKER TTL_SECONDS END_EPOCH
'use strict';
const fencing = require('..');

const [host, port, database, user, resource, worker, ttlS, endS] = process.argv.slice(2);
const pooled = { host, port: Number(port), database, user };
const ttl = Number(ttlS) * 1000;
const end = Number(endS) * 1000;
const now = () => (Date.now() / 1000).toFixed(3);
const say = (...f) => process.stdout.write(`${f.join(' ')}\n`);

async function main() {
  for (let k = 1; Date.now() < end; k++) {
    let lease = null;
    let app = null;
    try {
      lease = await fencing.acquire(pooled, { resource, holder: `w${worker}-${k}`, ttl, wait: 5000 });
      const tok = lease.token;
      say('token', tok, now());
      app = await fencing.connect(pooled);
      app.on('error', () => {});
      while (Date.now() < end && !lease.isLost) {
        const old = await lease.transaction(app, async (c) => {
          await c.query('UPDATE atk_rows SET v = v + 1 WHERE id = 1');
          const r = await c.query('UPDATE atk_last SET tok = $1 FROM (SELECT tok FROM atk_last FOR UPDATE) o'
            + ' RETURNING o.tok::text AS old', [String(tok)]);
          return r.rows[0].old;
        });
        say('write', tok, old);
        await fencing.sleep(50);
      }
      if (lease.isLost) say('lost', tok, now(), lease.lostReason);
    } catch (e) {
      if (lease && lease.isLost && !lease.isClosed) say('lost', lease.token, now(), lease.lostReason);
      say('error', e && e.code ? `${e.name}:${e.code}` : (e && e.name) || 'unknown', now());
      await fencing.sleep(300);
    } finally {
      if (app) await app.end().catch(() => {});
      if (lease) await lease.close().catch(() => {});
    }
    if (Math.random() < 0.5) await fencing.sleep(Math.random() * 1000);
  }
}
main().then(() => process.exit(0), (e) => { say('error', 'fatal', now()); console.error(e); process.exit(1); });
