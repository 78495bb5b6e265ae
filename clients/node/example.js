// pg-fencing in a worker: hold a lease, write under its token, stop when it is lost.
// Connection from the libpq environment (PGHOST, PGPORT, PGUSER, PGDATABASE).
//
//   node example.js
'use strict';
const fencing = require('pg-fencing');

async function main() {
  const app = await fencing.connect({}); // registers fencing_token as BigInt
  await app.query('CREATE TABLE IF NOT EXISTS pgf_example (item text PRIMARY KEY, stock int, fence fencing_token)');
  await app.query("INSERT INTO pgf_example VALUES ('SKU-1', 10, 0) ON CONFLICT DO NOTHING");

  await fencing.withLease({}, { resource: 'inventory', holder: `worker-${process.pid}`, ttl: 10000, wait: 5000 },
    async (lease) => {
      lease.on('lost', (err) => console.error(`lost: ${err.reason}`)); // lease.lost is an AbortSignal too
      console.log(`token ${lease.token}`);
      for (let i = 0; i < 3 && !lease.isLost; i++) {
        // BEGIN; SET LOCAL fencing.token; ...; COMMIT, refused once the lease is lost.
        await lease.transaction(app, (c) => c.query("UPDATE pgf_example SET stock = stock - 1 WHERE item = 'SKU-1'"));
        await fencing.fencedUpdate(app, 'pgf_example', lease.token, { item: 'SKU-1' }, { stock: 5 });
      }
    });

  try {
    await fencing.withToken(app, 0n, (c) => c.query("UPDATE pgf_example SET stock = 0 WHERE item = 'SKU-1'"));
  } catch (err) {
    if (!(err instanceof fencing.StaleTokenError)) throw err;
    console.log(`refused: ${err.table} ${err.key}: offered ${err.offered}, high-water mark ${err.hwm}`);
  }
  await app.end();
}

main().catch((err) => { console.error(err); process.exit(1); });
