// pg-fencing's tests against a server with the extension (the libpq
// environment: PGHOST, PGPORT, ...; test.sh starts a scratch cluster). Prints
// TAP lines, "ok N - ..." / "not ok N - ...", and "1..N" at the end.
'use strict';
const { spawn } = require('child_process');
const readline = require('readline');
const pg = require('pg');
const fencing = require('..');

const { MAX_TOKEN, StaleTokenError, TokenRequiredError, LeaseLostError, LeaseNotAcquiredError } = fencing;
let n = 0;
let failures = 0;
const RUN = `${process.pid}-${Date.now()}`;
const LABEL = process.env.TEST_LABEL ? `${process.env.TEST_LABEL} ` : '';

function ok(cond, what, diag) {
  n += 1;
  if (!cond) failures += 1;
  console.log(`${cond ? 'ok' : 'not ok'} ${n} - ${LABEL}${what}`);
  if (!cond && diag !== undefined) {
    const text = typeof diag === 'string' ? diag : JSON.stringify(diag, (k, v) => (typeof v === 'bigint' ? `${v}n` : v));
    for (const line of text.split('\n')) console.log(`# ${line}`);
  }
}

async function caught(fn) {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  return null;
}

// ---------------------------------------------------------------- codecs

async function testCodecs(app) {
  const r = await app.query("SELECT 5::fencing_token AS t, '{1,NULL,9223372036854775807}'::fencing_token[] AS a, 7::bigint AS b");
  ok(r.rows[0].t === 5n, 'a fencing_token result is a BigInt (type parser registered for its OID)', r.rows[0]);
  const a = r.rows[0].a;
  ok(Array.isArray(a) && a[0] === 1n && a[1] === null && a[2] === MAX_TOKEN, 'a fencing_token[] result is an array of BigInt and null', a);
  ok(r.rows[0].b === '7', 'other types keep the driver\'s own parsers (int8 stays a string)', r.rows[0]);
  const oids = await fencing.tokenOids(app);
  const o = await app.query("SELECT 'fencing_token'::regtype::oid AS oid");
  ok(oids.oid === Number(o.rows[0].oid), `the OID is looked up in this database (${oids.oid})`, { oids, actual: o.rows[0] });
  ok(fencing.tokenText(34) === '34' && fencing.tokenText('34') === '34' && fencing.tokenText(34n) === '34',
    'token parameters accept a number, a string and a BigInt');
  const bad = [-1, 1.5, 2 ** 53, '12a', '-3', 2n ** 63n, -1n, null, {}];
  const refused = bad.filter((v) => (() => { try { fencing.tokenText(v); return false; } catch (e) { return e instanceof TypeError || e instanceof RangeError; } })());
  ok(refused.length === bad.length, 'negative, fractional, unsafe, non-decimal and out-of-range tokens are refused before they reach the server',
    { refused: refused.length, of: bad.length });
  const p = await app.query('SELECT $1::fencing_token AS t, $2::fencing_token AS u, $3::fencing_token AS v', [fencing.tokenText(MAX_TOKEN), fencing.tokenText(12), fencing.tokenText('13')]);
  ok(p.rows[0].t === MAX_TOKEN && p.rows[0].u === 12n && p.rows[0].v === 13n, 'tokens round-trip as parameters and results', p.rows[0]);
}

// ---------------------------------------------------------------- leases

async function leaseRow(app, resource) {
  const r = await app.query("SELECT holder, token, live, (extract(epoch FROM expires_at) * 1000)::float8 AS expires_ms FROM fencing_leases WHERE resource = $1 AND namespace = 'default' ORDER BY acquired_at DESC LIMIT 1", [resource]);
  return r.rows[0];
}

async function testAcquire(app) {
  const resource = `acq-${RUN}`;
  const lease = await fencing.acquire({}, { resource, holder: 'a', ttl: 5000 });
  ok(typeof lease.token === 'bigint' && lease.token > 0n, `acquire: token ${lease.token} (a BigInt)`);
  const row = await leaseRow(app, resource);
  ok(row && row.live === true && row.holder === 'a' && row.token === lease.token, 'the server holds the live lease of holder a with that token', row);
  const t0 = Date.now();
  const err = await caught(() => fencing.acquire({}, { resource, holder: 'b', ttl: 5000, wait: 300 }));
  const waited = Date.now() - t0;
  ok(err instanceof LeaseNotAcquiredError && err instanceof Error, 'a second holder gets LeaseNotAcquiredError after its wait', err && err.message);
  ok(waited >= 250 && waited < 3000, `... after waiting about its 300 ms wait (${waited} ms)`);
  ok(await fencing.tryAcquire({}, { resource, holder: 'b', ttl: 5000 }) === null, 'tryAcquire resolves to null while the lease is held');
  if (await hasFunction(app, 'fencing_check')) {
    const again = (await app.query("SELECT fencing_acquire($1, 'a', '5 s') AS t", [resource])).rows[0].t;
    ok(again === lease.token, `re-acquire by the same holder returns its live token (${again})`);
  }
  ok(!lease.lost.aborted, 'the lease is not lost while held');
  ok(await lease.release() === true, 'release() ends the lease on the server');
  ok(!lease.lost.aborted && lease.lostReason === null && lease.state === 'closed',
    'after release the lease is closed, and the lost signal is not aborted (release is not a loss)', { state: lease.state });
  const after = await leaseRow(app, resource);
  ok(after.live === false, 'the server shows the lease not live after release', after);
  const b = await fencing.acquire({}, { resource, holder: 'b', ttl: 5000 });
  ok(b.token > lease.token, `the next holder gets a larger token (${b.token} > ${lease.token})`);
  await b.release();
}

async function testHeartbeat(app) {
  const resource = `hb-${RUN}`;
  const ttl = 1500;
  const lease = await fencing.acquire({}, { resource, holder: 'hb', ttl });
  let lostEvents = 0;
  lease.on('lost', () => { lostEvents += 1; });
  const renewedAt = [];
  lease.on('renewed', () => renewedAt.push(Date.now()));
  await fencing.sleep(ttl * 4);
  const row = await leaseRow(app, resource);
  ok(!lease.lost.aborted && lostEvents === 0, `heartbeat: the lease is held past 4 TTLs (${ttl * 4} ms), no lost signal`, { reason: lease.lostReason });
  ok(lease.renewals >= 6, `... renewed ${lease.renewals} times in the background (every ~ttl/3, with jitter)`);
  const gaps = renewedAt.slice(1).map((t, i) => t - renewedAt[i]);
  ok(gaps.length > 2 && new Set(gaps).size > 1, `... at jittered intervals (${gaps.join(', ')} ms)`);
  ok(row.live === true && row.token === lease.token && row.expires_ms > Date.now(), 'the server still holds it live, with the first token', row);
  ok(await fencing.tryAcquire({}, { resource, holder: 'other', ttl }) === null, 'a contender cannot take it');
  await lease.release();
}

// Renewals that hang (the lease row locked by another transaction): the lost
// signal fires before the server's expiry.
async function testLostBeforeTtl(app) {
  const resource = `block-${RUN}`;
  const ttl = 3000;
  const lease = await fencing.acquire({}, { resource, holder: 'blocked', ttl, safety: 600 });
  const lostInfo = new Promise((resolve) => lease.once('lost', (err) => resolve({ at: Date.now(), err })));
  const abortSeen = new Promise((resolve) => lease.lost.addEventListener('abort', () => resolve(lease.lost.reason), { once: true }));
  const blocker = await fencing.connect({});
  await blocker.query('BEGIN');
  await blocker.query('SELECT 1 FROM fencing.lease WHERE resource = $1 FOR UPDATE', [resource]);
  const expires = (await leaseRow(app, resource)).expires_ms;
  const { at, err } = await lostInfo;
  const reason = await abortSeen;
  const row = await leaseRow(app, resource);
  ok(err instanceof LeaseLostError, `renewals blocked: the 'lost' event fires with a LeaseLostError (${err.message})`);
  ok(reason instanceof LeaseLostError, 'the AbortSignal aborts with the same kind of reason');
  const margin = row.expires_ms - at;
  ok(margin > 0, `... ${Math.round(margin)} ms BEFORE the server's expiry (the server's lease was never extended past ${new Date(expires).toISOString()})`,
    { lostAt: at, serverExpires: row.expires_ms });
  const e2 = await caught(() => lease.transaction(app, (c) => c.query('SELECT 1')));
  ok(e2 instanceof LeaseLostError, 'a transaction under the lost lease is refused before BEGIN (LeaseLostError)', e2 && e2.message);
  const e3 = await caught(() => fencing.fencedUpdate(app, 'no_such_table_needed', lease, { id: 1 }, { v: 1 }));
  ok(e3 instanceof LeaseLostError, 'so is a fencedUpdate() given the lost lease as its token, before any query', e3 && e3.message);
  await blocker.query('ROLLBACK');
  await blocker.end();
  await lease.release();
}

// The lease's connection killed: renewals go on over a new one.
async function testReconnect(app) {
  const resource = `reconnect-${RUN}`;
  const ttl = 1500;
  const lease = await fencing.acquire({}, { resource, holder: 'rc', ttl });
  const pid = lease.client.processID;
  await app.query('SELECT pg_terminate_backend($1)', [pid]);
  await fencing.sleep(ttl * 2);
  const row = await leaseRow(app, resource);
  ok(!lease.lost.aborted && lease.reconnects === 1 && lease.client.processID !== pid,
    `its renewal connection terminated, the lease reconnects (backend ${pid} -> ${lease.client.processID}) and is not lost`, { reason: lease.lostReason, reconnects: lease.reconnects });
  ok(row.live === true && row.token === lease.token && row.expires_ms > Date.now() + ttl / 3, '... and the server shows it renewed since', row);
  ok(await lease.release() === true, '... and released over the new connection');
}

// A renewal the server refuses (the lease ended behind the holder's back).
async function testRefused(app) {
  const resource = `refused-${RUN}`;
  const lease = await fencing.acquire({}, { resource, holder: 'r', ttl: 3000 });
  const lost = new Promise((resolve) => lease.once('lost', (err) => resolve({ at: Date.now(), err })));
  const t0 = Date.now();
  await app.query('SELECT fencing_release($1, $2)', [resource, fencing.tokenText(lease.token)]);
  const { at, err } = await lost;
  ok(err instanceof LeaseLostError && /refused/.test(err.reason) && lease.lost.aborted,
    `a renewal the server refuses fires the lost signal at its next renewal (${at - t0} ms after the lease ended, TTL 3000)`, err && err.reason);
  ok(at - t0 < 2000, '... at the next renewal, not at the TTL');
  await lease.release();
}

// A real pause: the holder in a child process, SIGSTOP past the TTL.
async function testPause(app) {
  const resource = `pause-${RUN}`;
  const table = 'pause_t';
  await app.query(`DROP TABLE IF EXISTS ${table}`);
  await app.query(`CREATE TABLE ${table} (id int PRIMARY KEY, v text, fence fencing_token)`);
  await app.query(`INSERT INTO ${table} VALUES (1, 'init', 0)`);
  const ttl = 1200;
  const child = spawn(process.execPath, [`${__dirname}/holder.js`, resource, table, String(ttl)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async () => JSON.parse((await lines.next()).value);
  const ready = await next();
  ok(ready.ready === true, `pause: the child holder acquired token ${ready.token} and wrote`, ready);
  process.kill(child.pid, 'SIGSTOP');
  const stoppedAt = Date.now();
  await fencing.sleep(ttl + 800);
  const b = await fencing.acquire({}, { resource, holder: 'successor', ttl: 10000, wait: 3000 });
  await b.transaction(app, (c) => c.query(`UPDATE ${table} SET v = 'successor' WHERE id = 1`));
  ok(b.token > BigInt(ready.token), `while it is stopped (${Date.now() - stoppedAt} ms, TTL ${ttl}), a successor takes token ${b.token} and writes`);
  process.kill(child.pid, 'SIGCONT');
  child.stdin.end('go\n');
  const st = await next();
  ok(st.lost === true, `after SIGCONT the child's lost signal has fired (${st.reason})`, st);
  const via = (await next()).viaLease;
  ok(via.leaseLost === true && via.name === 'LeaseLostError', 'its late write through the lease is refused by the client: LeaseLostError', via);
  const raw = (await next()).raw;
  ok(raw.stale === true && raw.instanceofError === true && raw.code === 'TF001', 'its late write with the raw token is refused by the server: StaleTokenError (an ordinary Error, TF001)', raw);
  ok(raw.schema === 'public' && raw.table === table, `... schema and table from the error's fields (${raw.schema}.${raw.table})`, raw);
  ok(raw.key === 'Key (id)=(1)', `... key from DETAIL (${raw.key})`, raw);
  ok(raw.offered === ready.token && raw.hwm === b.token.toString() && raw.strict === false,
    `... offered ${raw.offered} and high-water mark ${raw.hwm} from DETAIL`, raw);
  await new Promise((resolve) => child.on('exit', resolve));
  const v = await app.query(`SELECT v, fence FROM ${table} WHERE id = 1`);
  ok(v.rows[0].v === 'successor' && v.rows[0].fence === b.token, "the row is the successor's", v.rows[0]);
  await b.release();
}

// ---------------------------------------------------------------- writing

async function testCarriage(app) {
  const t = 'carry_t';
  await app.query(`DROP TABLE IF EXISTS ${t}`);
  await app.query(`CREATE TABLE ${t} (id int PRIMARY KEY, v text, fence fencing_token)`);
  await app.query(`SELECT fencing_protect('${t}', require_token => true)`);
  await app.query(`INSERT INTO ${t} VALUES (1, 'a', 10)`);
  const e1 = await caught(() => app.query(`UPDATE ${t} SET v = 'bare' WHERE id = 1`).catch((e) => { throw fencing.typedError(e); }));
  ok(e1 instanceof TokenRequiredError && e1.code === 'TF002' && e1.table === t, 'autocommit: a write without a token is TokenRequiredError (TF002, table from the error field)', e1 && { name: e1.name, code: e1.code, table: e1.table, message: e1.message });
  await app.query("SET fencing.token = '20'");
  const e2 = await caught(() => app.query(`UPDATE ${t} SET v = 'session' WHERE id = 1`).catch((e) => { throw fencing.typedError(e); }));
  ok(e2 instanceof TokenRequiredError, 'a session-level SET fencing.token does not fence an autocommit write: refused (TokenRequiredError)', e2 && e2.message);
  await app.query('RESET fencing.token');
  const rc = await fencing.withToken(app, 20n, (c) => c.query(`UPDATE ${t} SET v = 'fenced' WHERE id = 1`).then((r) => r.rowCount));
  ok(rc === 1, 'withToken on an autocommit connection: BEGIN, SET LOCAL fencing.token, the write, COMMIT');
  const s = await app.query("SELECT current_setting('fencing.token', true) AS t, (SELECT fence FROM carry_t WHERE id = 1) AS fence");
  ok((s.rows[0].t || '') === '' && s.rows[0].fence === 20n, 'the token was written and does not outlive the transaction on the connection', s.rows[0]);

  // What the server received: a literal SET LOCAL (what Citus forwards to its
  // workers), over the simple protocol (nothing prepared), read from another
  // connection while the block runs.
  const watcher = new pg.Client();
  await watcher.connect();
  const pid = (await app.query('SELECT pg_catalog.pg_backend_pid() AS pid')).rows[0].pid;
  const seen = await fencing.withToken(app, 20n, async () => (await watcher.query(
    'SELECT query, state FROM pg_catalog.pg_stat_activity WHERE pid = $1', [pid])).rows[0]);
  const prepared = await app.query("SELECT count(*)::int AS n FROM pg_catalog.pg_prepared_statements WHERE statement ~ 'fencing[.]token'");
  const after = await app.query("SELECT current_setting('fencing.token', true) AS t");
  ok(seen.query === "SET LOCAL fencing.token = '20'" && seen.state === 'idle in transaction' && prepared.rows[0].n === 0
    && (after.rows[0].t || '') === '',
  "withToken sends SET LOCAL fencing.token = '20' as its own statement, unprepared, and it ends with the transaction",
  { seen, prepared: prepared.rows[0].n, after: after.rows[0].t });
  const bad = await caught(() => fencing.withToken(app, "20'; RESET fencing.token; --", () => null));
  const last = (await watcher.query('SELECT query FROM pg_catalog.pg_stat_activity WHERE pid = $1', [pid])).rows[0].query;
  ok(bad instanceof TypeError && !/RESET/.test(last), 'withToken refuses a token string that is not decimal digits (TypeError), nothing sent', { bad: bad && bad.message, last });
  await watcher.end();
  await app.query('BEGIN');
  const e3 = await caught(() => fencing.withToken(app, 21n, (c) => c.query('SELECT 1')));
  await app.query('ROLLBACK');
  ok(e3 && /outside a transaction/.test(e3.message), 'withToken refuses a client already inside a transaction', e3 && e3.message);
  const e4 = await caught(() => fencing.withToken(app, 5n, (c) => c.query(`UPDATE ${t} SET v = 'stale' WHERE id = 1`)));
  ok(e4 instanceof StaleTokenError && e4.offered === 5n && e4.hwm === 20n && e4.key === 'Key (id)=(1)', 'a stale write in withToken is StaleTokenError with offered, HWM and key', e4 && { name: e4.name, offered: e4.offered, hwm: e4.hwm, key: e4.key });
  const st = await app.query("SELECT pg_catalog.pg_current_xact_id_if_assigned() IS NULL AS idle, current_setting('fencing.token', true) AS t");
  ok((st.rows[0].t || '') === '', '... rolled back, the connection clean');

  await app.query(`SELECT fencing_protect('${t}', require_token => true, strict => true)`);
  const e5 = await caught(() => fencing.withToken(app, 20n, (c) => c.query(`UPDATE ${t} SET v = 'again' WHERE id = 1`)));
  ok(e5 instanceof StaleTokenError && e5.strict === true && e5.offered === 20n && e5.hwm === 20n, 'strict mode\'s DETAIL ("is not above ... (strict ...)") parses too', e5 && { name: e5.name, strict: e5.strict, detail: e5.detail });

  // A stale write caught inside fn: the server aborted the transaction and
  // answers COMMIT with ROLLBACK (no error), so withToken must not succeed.
  await app.query(`INSERT INTO ${t} VALUES (2, 'b', 30)`);
  const e6 = await caught(() => fencing.withToken(app, 25n, async (c) => {
    await c.query(`UPDATE ${t} SET v = 'lost' WHERE id = 1`);
    await c.query(`UPDATE ${t} SET v = 'stale' WHERE id = 2`).catch(() => {});
    return 'done';
  }));
  const r6 = await app.query(`SELECT v, fence FROM ${t} WHERE id = 1`);
  ok(e6 instanceof fencing.TransactionAbortedError && r6.rows[0].v !== 'lost' && r6.rows[0].fence === 20n,
    'a StaleTokenError caught inside withToken: TransactionAbortedError, not a success; nothing committed', e6 ? { name: e6.name, row: r6.rows[0] } : 'no error');
}

async function testFencedCalls(app) {
  const t = 'calls_t';
  await app.query(`DROP TABLE IF EXISTS ${t}`);
  await app.query(`CREATE TABLE ${t} (item text PRIMARY KEY, stock int, fence fencing_token)`);
  ok(await fencing.fencedUpsert(app, t, 10n, { item: 'x', stock: 5 }) === 1, 'fencedUpsert inserts (1 row)');
  ok(await fencing.fencedUpdate(app, t, 11, { item: 'x' }, { stock: 4 }) === 1, 'fencedUpdate with a number token writes 1 row');
  const e = await caught(() => fencing.fencedUpdate(app, t, '9', { item: 'x' }, { stock: 99 }));
  ok(e instanceof StaleTokenError && e.offered === 9n && e.hwm === 11n && e.table === t && e.schema === 'public', 'a stale fencedUpdate throws StaleTokenError (offered 9, HWM 11)', e && { name: e.name, offered: e.offered, hwm: e.hwm, table: e.table });
  ok(await fencing.fencedUpdate(app, t, 9n, { item: 'x' }, { stock: 99 }, { staleAsZero: true }) === 0, '... or 0 with staleAsZero');
  ok(await fencing.fencedUpdate(app, t, 12n, { item: 'nope' }, { stock: 1 }) === 0, 'fencedUpdate of a missing row returns 0 (not stale)');
  const e2 = await caught(() => fencing.fencedUpsert(app, t, 3n, { item: 'x', stock: 0 }));
  ok(e2 instanceof StaleTokenError && e2.hwm === 11n, 'a stale fencedUpsert throws StaleTokenError', e2 && e2.message);
  const e3 = await caught(() => fencing.fencedDelete(app, t, 4n, { item: 'x' }));
  ok(e3 instanceof StaleTokenError && e3.offered === 4n, 'a stale fencedDelete throws StaleTokenError', e3 && e3.message);
  ok(await fencing.fencedDelete(app, t, 12n, { item: 'x' }) === 1, 'fencedDelete with a current token deletes 1 row');
  const how = (await hasFunction(app, 'fenced_update_result')) ? 'fenced_*_result() in the same call' : 'a second read (no fenced_*_result() here)';
  console.log(`# stale was told from missing by ${how}`);
  const r = await app.query(`SELECT count(*)::int AS c, fencing_high_water('${t}', '{"item": "x"}') AS hwm FROM ${t}`);
  ok(r.rows[0].c === 0 && r.rows[0].hwm === 12n, 'the tombstone keeps HWM 12 (a BigInt)', r.rows[0]);
}

async function testMaxToken(app) {
  const resource = `max-${RUN}`;
  await app.query('SELECT fencing_resource_advance($1, $2)', [resource, fencing.tokenText(MAX_TOKEN - 1n)]);
  const lease = await fencing.acquire({}, { resource, holder: 'max', ttl: 5000 });
  ok(lease.token === MAX_TOKEN, `the largest token is exact: ${lease.token}`);
  await app.query('DROP TABLE IF EXISTS max_t');
  await app.query('CREATE TABLE max_t (id int PRIMARY KEY, fence fencing_token)');
  await app.query('INSERT INTO max_t VALUES (1, 0)');
  await lease.transaction(app, (c) => c.query('UPDATE max_t SET id = 1 WHERE id = 1'));
  const r = await app.query('SELECT fence, fence::text AS text FROM max_t');
  ok(r.rows[0].fence === MAX_TOKEN && r.rows[0].text === '9223372036854775807', 'written under it and read back exactly', r.rows[0]);
  const e = await caught(() => fencing.withToken(app, MAX_TOKEN - 1n, (c) => c.query('UPDATE max_t SET id = 1 WHERE id = 1')));
  ok(e instanceof StaleTokenError && e.offered === MAX_TOKEN - 1n && e.hwm === MAX_TOKEN, 'one below it is stale, both numbers exact in the error', e && { offered: e.offered, hwm: e.hwm });
  await lease.release();
}

// node-postgres decodes DataRow fields as UTF-8 text whatever their format.
async function testBinary(app) {
  const bin = new pg.Client({ binary: true });
  await bin.connect();
  // A parameter makes it the extended protocol, the one binary: true affects.
  let got;
  try {
    got = `the value ${JSON.stringify(String((await bin.query('SELECT $1::int8 AS i', ['9223372036854775807'])).rows[0].i))}`;
  } catch (err) {
    got = `${err.name}: ${err.message}`;
  }
  ok(got !== 'the value "9223372036854775807"',
    `binary: true breaks int8 in node-postgres itself (the driver bug): SELECT $1::int8 gave ${got}`);
  const e = await caught(() => fencing.register(bin));
  ok(e && /text mode/.test(e.message), 'register() refuses a binary-mode client', e && e.message);
  const e2 = await caught(() => fencing.withToken(bin, 1n, (c) => c.query('SELECT 1')));
  ok(e2 && /text mode/.test(e2.message), 'withToken() refuses a binary-mode client before BEGIN', e2 && e2.message);
  const e3 = await caught(() => fencing.connect({ binary: true }));
  ok(e3 && /text mode/.test(e3.message), 'connect({ binary: true }) is refused');
  await bin.end();
  const pool = new pg.Pool({ types: fencing.typesFor(await fencing.tokenOids(app)), max: 1 });
  const p = await pool.query("SELECT '9223372036854775807'::fencing_token AS t");
  ok(p.rows[0].t === MAX_TOKEN, 'a pg.Pool with typesFor(...) parses tokens as BigInt');
  await pool.end();
}

async function testRelease(app) {
  const resource = `with-${RUN}`;
  let token = null;
  const e = await caught(() => fencing.withLease({}, { resource, holder: 'w', ttl: 5000 }, async (lease) => {
    token = lease.token;
    throw new Error('boom');
  }));
  const row = await leaseRow(app, resource);
  ok(e && e.message === 'boom' && row.live === false && row.token === token, 'withLease releases the lease when fn throws', row);
  if (typeof Symbol.asyncDispose === 'symbol') {
    const lease = await fencing.acquire({}, { resource, holder: 'd', ttl: 5000 });
    await lease[Symbol.asyncDispose]();
    const r2 = await leaseRow(app, resource);
    ok(r2.live === false && r2.token === lease.token, 'lease[Symbol.asyncDispose]() (what `await using` calls) releases it', r2);
  } else {
    const lease = await fencing.acquire({}, { resource, holder: 'd', ttl: 5000 });
    await lease.close();
    const r2 = await leaseRow(app, resource);
    ok(r2.live === false, 'lease.close() releases it (this Node has no Symbol.asyncDispose)', r2);
  }
}

// ---------------------------------------------------------------- acquireAll, check

// Whether the installed SQL has the function. From 1.5 on it must: a
// missing function there is a failure, never a reason to test less.
async function hasFunction(app, name, required15 = true) {
  const r = await app.query(`SELECT EXISTS (SELECT 1 FROM pg_proc p JOIN pg_extension e ON e.extnamespace = p.pronamespace
                                              WHERE e.extname = 'fencing' AND p.proname = $1) AS has,
                                    string_to_array(extversion, '.')::int[] >= '{1,5}' AS required
                               FROM pg_extension WHERE extname = 'fencing'`, [name]);
  const { has, required } = r.rows[0];
  if (required && required15) ok(has, `the installed SQL (1.5 or later) has ${name}()`);
  return has;
}

async function testAcquireAll(app) {
  const rs = [`all-a-${RUN}`, `all-b-${RUN}`, `all-c-${RUN}`];
  if (!(await hasFunction(app, 'fencing_acquire_all'))) {
    const e = await caught(() => fencing.acquireAll({}, { resources: rs, holder: 'm', ttl: 3000 }));
    ok(e && e.code === '55000' && /ALTER EXTENSION fencing UPDATE/.test(e.message),
      'acquireAll on an extension without fencing_acquire_all(): 55000, "ALTER EXTENSION fencing UPDATE"', e && e.message);
    return;
  }
  const m = await fencing.acquireAll({}, { resources: rs, holder: 'm', ttl: 1500 });
  ok(m.tokens.length === 3 && m.tokens.every((t) => typeof t === 'bigint' && t > 0n), `acquireAll: three tokens ${m.tokens.join(', ')}`);
  const one = await fencing.tryAcquire({}, { resource: rs[1], holder: 'x', ttl: 3000 });
  ok(one === null, 'one of them cannot be taken by another holder');
  const none = await fencing.acquireAll({}, { resources: [`all-d-${RUN}`, rs[2]], holder: 'y', ttl: 3000, required: false });
  const d = await leaseRow(app, `all-d-${RUN}`);
  ok(none === null && (d === undefined || d.live === false), 'acquireAll of a free and a held resource gets none (all or none)', { none: none && none.tokens, d });
  await fencing.sleep(1500 * 3);
  ok(!m.lost.aborted && m.renewals >= 5, `all three renewed together past 3 TTLs (${m.renewals} renewals)`);
  await app.query('DROP TABLE IF EXISTS all_t');
  await app.query('CREATE TABLE all_t (id int PRIMARY KEY, fence fencing_token)');
  await app.query('INSERT INTO all_t VALUES (1, 0)');
  await m.transaction(app, (c) => c.query('UPDATE all_t SET id = 1'), { resource: rs[2] });
  const f = await app.query('SELECT fence FROM all_t');
  ok(f.rows[0].fence === m.tokens[2] && m.tokenFor(rs[2]) === m.tokens[2], "lease.transaction(..., { resource }) writes under that resource's token", f.rows[0]);
  ok(await fencing.check(app, rs[0], m.tokens[0]) === true, 'check(): the live token is current');
  ok(await fencing.check(app, rs[0], m.tokens[0] - 1n) === false, 'check(): an older token is not');
  await m.release();
  const all = await Promise.all(rs.map((r) => leaseRow(app, r)));
  ok(all.every((r) => r.live === false), 'release() ends all three', all);
}

async function testCheckOld(app) {
  if (await hasFunction(app, 'fencing_check', false)) return;
  const e = await caught(() => fencing.check(app, 'r', 1n));
  ok(e && e.code === '55000', 'check on an extension without fencing_check(): 55000', e && e.message);
}

// A FATAL between two of the library's own statements (test/error_window.js):
// the call fails; the process is not ended by an unhandled 'error' event.
async function testErrorWindow() {
  for (const [what, at, where] of [['connect', 1, "connect(): before register's lookup"],
    ['acquire', 2, "acquire(): between register's lookup and the extension lookup"],
    ['acquire', 3, 'acquire(): between the extension lookup and fencing_acquire']]) {
    const r = require('child_process').spawnSync(process.execPath, [`${__dirname}/error_window.js`, what, String(at)],
      { encoding: 'utf8', timeout: 30000 });
    ok(r.status === 0 && /^rejected /m.test(r.stdout),
      `a FATAL on the library's idle connection in ${where} fails the call, the process lives (${(r.stdout || '').trim()})`,
      { status: r.status, stdout: r.stdout, stderr: (r.stderr || '').split('\n').slice(0, 6).join('\n') });
  }
}

async function main() {
  const app = await fencing.connect({});
  await app.query('SET client_min_messages = warning');
  const steps = [testCodecs, testAcquire, testHeartbeat, testLostBeforeTtl, testReconnect, testRefused, testPause, testCarriage,
    testFencedCalls, testMaxToken, testBinary, testRelease, testAcquireAll, testCheckOld, testErrorWindow,
    ...require('./contract')({ ok, caught, leaseRow, RUN }), ...require('./takeover')({ ok, caught, RUN })];
  for (const step of steps) {
    try {
      await step(app);
    } catch (err) {
      ok(false, `${step.name}: unexpected ${err.name} ${err.code || ''}: ${err.message}`, err.stack);
    }
  }
  await app.end();
  process.exit(failures === 0 ? 0 : 1);
}

main().catch((err) => {
  console.log(`not ok ${n + 1} - unexpected: ${err.stack}`);
  process.exit(1);
});
