// A FATAL that reaches one of the library's own connections between two of
// its statements (no query active: pg emits 'error' on the client) must fail
// the call, not end the process with an unhandled 'error' event. The backend
// of the Nth statement's connection is terminated before that statement is
// sent (the client idle, the FATAL read before it).
//   node test/error_window.js connect|acquire N    (libpq environment)
// Prints "rejected <code or message>" and exits 0 when the call failed.
'use strict';
const pg = require('pg');
const fencing = require('..');

const [what, at] = [process.argv[2], Number(process.argv[3])];
const original = pg.Client.prototype.query;
let admin = null;
let count = 0;
pg.Client.prototype.query = function query(...args) {
  if (this === admin || typeof args[args.length - 1] === 'function') return original.apply(this, args);
  count += 1;
  if (count !== at) return original.apply(this, args);
  const self = this;
  return (async () => {
    await original.call(admin, 'SELECT pg_terminate_backend($1)', [self.processID]);
    await fencing.sleep(300);
    return original.apply(self, args);
  })();
};

async function main() {
  admin = new pg.Client();
  await admin.connect();
  try {
    if (what === 'connect') {
      const c = await fencing.connect();
      await c.query('SELECT 1');
      await c.end();
    } else {
      const l = await fencing.acquire({}, { resource: `ew-${process.pid}`, holder: 'ew', ttl: 3000 });
      await l.release();
    }
    console.log('not rejected');
  } catch (err) {
    console.log(`rejected ${err.code || err.message}`);
  }
  await admin.end();
}
main().then(() => process.exit(0));
