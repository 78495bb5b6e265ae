// fencing from Node.js with node-postgres (`pg`, pinned in package-lock.json).
//
// Tokens are BigInt, never Number: a Number loses integers above 2^53, and
// 9223372036854775807 is a valid token. `pg` returns fencing_token (a type it
// does not know) as a string, turned into a BigInt here, and tokens go out as
// decimal strings.
//
// A lease token, advance, read, fenced_update(), a transparent UPDATE under
// SET LOCAL fencing.token, then a stale holder's writes caught as StaleToken
// (SQLSTATE TF001 or 0 rows), a token-less write as TokenRequired (TF002),
// and the largest token without loss. Connection from the libpq environment
// (PGHOST, PGPORT, ...). Prints "ok - ..." lines; exits 1 on the first failure.
'use strict';
const { Client } = require('pg');

class FencingError extends Error {}

// The lock was lost: re-acquire it to get a new token, re-read, then write.
class StaleToken extends FencingError {
  constructor(message, { sqlstate = null, offered = null, hwm = null } = {}) {
    super(message);
    this.name = 'StaleToken';
    this.sqlstate = sqlstate;
    this.offered = offered; // BigInt
    this.hwm = hwm;         // BigInt
  }
}

class TokenRequired extends FencingError {
  constructor(message) {
    super(message);
    this.name = 'TokenRequired';
    this.sqlstate = 'TF002';
  }
}

// TF001's DETAIL: "<key>: offered token T is below the high-water mark H."
// (strict mode: "is not above"). pg exposes DETAIL as err.detail; the numbers
// are inside its text, so that field is parsed, from its end.
const DETAIL = /offered token (\d+) is (?:below|not above) the high-water mark (\d+)(?: \(strict[^)]*\))?\.$/;

function typed(err) {
  if (err.code === 'TF001') {
    const m = DETAIL.exec(err.detail || '');
    return new StaleToken(err.message, {
      sqlstate: 'TF001',
      offered: m ? BigInt(m[1]) : null,
      hwm: m ? BigInt(m[2]) : null,
    });
  }
  if (err.code === 'TF002') return new TokenRequired(err.message);
  return err;
}

async function fencedQuery(client, sql, params) {
  try {
    return await client.query(sql, params);
  } catch (err) {
    throw typed(err);
  }
}

// fenced_update(): rows written. 0 rows while the key's HWM is at or above
// the token (strict mode refuses an equal one) throws StaleToken with that
// HWM; 0 rows below it means there is no such row.
async function fencedUpdate(client, table, token, key, changes) {
  const r = await client.query('SELECT fenced_update($1, $2, $3, $4)::text AS n',
    [table, token.toString(), JSON.stringify(key), JSON.stringify(changes)]);
  const n = BigInt(r.rows[0].n);
  if (n === 0n) {
    const h = await client.query('SELECT fencing_high_water($1, $2)::text AS hwm', [table, JSON.stringify(key)]);
    const hwm = BigInt(h.rows[0].hwm);
    if (hwm >= token) throw new StaleToken('fenced_update() wrote 0 rows', { offered: token, hwm });
  }
  return n;
}

// Runs fn(client) in a transaction whose ordinary statements carry the token.
async function withToken(client, token, fn) {
  await client.query('BEGIN');
  try {
    await client.query("SELECT set_config('fencing.token', $1, true)", [token.toString()]);
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK');
    throw typed(err);
  }
}

function ok(what, cond) {
  console.log(`${cond ? 'ok' : 'not ok'} - ${what}`);
  if (!cond) process.exit(1);
}

async function acquire(client, resource, holder) {
  const r = await client.query("SELECT fencing_acquire($1, $2, '30 s')::text AS t", [resource, holder]);
  return BigInt(r.rows[0].t);
}

async function row(client) {
  const r = await client.query("SELECT stock, fence::text AS fence FROM ex_node WHERE item = 'SKU-001'");
  return { stock: r.rows[0].stock, fence: BigInt(r.rows[0].fence) };
}

async function expectStale(what, fn, check) {
  try {
    await fn();
  } catch (err) {
    if (err instanceof StaleToken) return ok(`${what} -> StaleToken(offered ${err.offered}, hwm ${err.hwm})`, check(err));
    throw err;
  }
  ok(`${what} refused`, false);
}

async function main() {
  const client = new Client(); // PGHOST, PGPORT, PGUSER, PGDATABASE
  await client.connect();
  const key = { item: 'SKU-001' };
  const resource = `ex-node-${process.pid}-${Date.now()}`;
  await client.query('SET client_min_messages = warning');
  await client.query('DROP TABLE IF EXISTS ex_node');
  await client.query('CREATE TABLE ex_node (item text PRIMARY KEY, stock int NOT NULL, fence fencing_token)');
  await client.query("INSERT INTO ex_node VALUES ('SKU-001', 10, 0)");

  const a = await acquire(client, resource, 'worker-a');
  ok(`acquired token ${a} (${typeof a})`, typeof a === 'bigint' && a > 0n);
  const adv = await client.query('SELECT fencing_advance($1, $2, $3) AS adv', ['ex_node', a.toString(), JSON.stringify(key)]);
  ok(`advanced SKU-001 to ${a}`, adv.rows[0].adv === true);
  const before = await row(client);
  ok('fenced_update wrote 1 row', (await fencedUpdate(client, 'ex_node', a, key, { stock: before.stock - 1 })) === 1n);
  const n = await withToken(client, a, (c) =>
    c.query("UPDATE ex_node SET stock = stock - 1 WHERE item = 'SKU-001'").then((r) => r.rowCount));
  ok('transparent UPDATE under SET LOCAL fencing.token wrote 1 row', n === 1);
  let now = await row(client);
  ok(`stock 8, fence ${a}`, now.stock === 8 && now.fence === a);

  await client.query('SELECT fencing_release($1, $2)', [resource, a.toString()]);
  const b = await acquire(client, resource, 'worker-b');
  await client.query('SELECT fencing_advance($1, $2, $3)', ['ex_node', b.toString(), JSON.stringify(key)]);
  await fencedUpdate(client, 'ex_node', b, key, { stock: 7 });
  ok(`holder B took token ${b} and wrote`, b > a);

  await expectStale('stale fenced_update', () => fencedUpdate(client, 'ex_node', a, key, { stock: 99 }),
    (e) => e.offered === a && e.hwm === b);
  await expectStale('stale transparent UPDATE (TF001, err.detail)',
    () => withToken(client, a, (c) => c.query("UPDATE ex_node SET stock = 99 WHERE item = 'SKU-001'")),
    (e) => e.sqlstate === 'TF001' && e.offered === a && e.hwm === b);
  now = await row(client);
  ok("stock is B's: 7", now.stock === 7 && now.fence === b);
  await client.query('SELECT fencing_release($1, $2)', [resource, b.toString()]);

  // The largest token, exact only as BigInt.
  const top = 9223372036854775807n;
  await client.query('SELECT fencing_resource_advance($1, $2)', [`${resource}-big`, (top - 1n).toString()]);
  const c = await acquire(client, `${resource}-big`, 'worker-c');
  ok(`fencing_acquire handed out ${c}`, c === top);
  ok('as a Number it would equal 9223372036854775806 (why tokens are BigInt)', Number(c) === Number(top - 1n));
  await withToken(client, c, (cl) => cl.query("UPDATE ex_node SET stock = 1 WHERE item = 'SKU-001'"));
  ok('token 9223372036854775807 stored exactly', (await row(client)).fence === top);
  await expectStale('stale 9223372036854775806',
    () => withToken(client, top - 1n, (cl) => cl.query("UPDATE ex_node SET stock = 2 WHERE item = 'SKU-001'")),
    (e) => e.offered === top - 1n && e.hwm === top);
  await client.query('SELECT fencing_release($1, $2)', [`${resource}-big`, c.toString()]);

  await client.query("SELECT fencing_protect('ex_node', require_token => true)");
  try {
    await fencedQuery(client, "UPDATE ex_node SET stock = 0 WHERE item = 'SKU-001'");
    ok('write without a token refused', false);
  } catch (err) {
    ok(`write without a token -> ${err.name} ${err.sqlstate}`, err instanceof TokenRequired);
  }
  await client.query('DROP TABLE ex_node');
  await client.end();
}

main().catch((err) => {
  console.log(`not ok - unexpected error ${err.code || ''}: ${err.message}`);
  process.exit(1);
});
