// What docs/clients.md says of the other Node.js drivers, checked: postgres
// (porsager) 3.4 and Sequelize 6 (over pg) against a server with the
// extension. TAP lines; TEST_LABEL prefixes each description.
'use strict';
const postgres = require('postgres');
const pg = require('pg');
const { Sequelize, DataTypes } = require('sequelize');
const fencing = require('..');

const LABEL = process.env.TEST_LABEL ? `${process.env.TEST_LABEL} ` : '';
let n = Number(process.env.TEST_START || 0);
let failures = 0;
function ok(cond, what, diag) {
  n += 1;
  if (!cond) failures += 1;
  console.log(`${cond ? 'ok' : 'not ok'} ${n} - ${LABEL}${what}`);
  if (!cond && diag !== undefined) console.log(`# ${JSON.stringify(diag, (k, v) => (typeof v === 'bigint' ? `${v}n` : v))}`);
}
async function caught(fn) {
  try { await fn(); } catch (err) { return err; }
  return null;
}

async function porsager(oid) {
  const plain = postgres({ onnotice: () => {} });
  const r0 = await plain`SELECT 9223372036854775807::fencing_token AS t`;
  ok(r0[0].t === '9223372036854775807', 'postgres (porsager): unregistered, a fencing_token comes back as a string', r0[0]);
  await plain.end();
  const token = { to: oid, from: [oid], serialize: (x) => x.toString(), parse: (x) => BigInt(x) };
  const sql = postgres({ onnotice: () => {}, types: { fencing_token: token } });
  const p = await sql`SELECT ${9223372036854775807n}::fencing_token AS a, ${34}::fencing_token AS b, ${'35'}::fencing_token AS c`;
  ok(p[0].a === fencing.MAX_TOKEN && p[0].b === 34n && p[0].c === 35n,
    'postgres: with types.fencing_token (OID looked up first) tokens are BigInt; BigInt, number and string parameters bind', p[0]);
  await sql`DROP TABLE IF EXISTS pors_t`;
  await sql`CREATE TABLE pors_t (id int PRIMARY KEY, v text, fence fencing_token)`;
  await sql`INSERT INTO pors_t VALUES (1, 'a', 10)`;
  await sql.begin(async (tx) => {
    await tx`SELECT set_config('fencing.token', ${'20'}, true)`;
    await tx`UPDATE pors_t SET v = 'b' WHERE id = 1`;
  });
  const f = await sql`SELECT fence FROM pors_t`;
  ok(f[0].fence === 20n, 'postgres: sql.begin() with set_config(..., true) writes under the token', f[0]);
  const e = await caught(() => sql.begin(async (tx) => {
    await tx`SELECT set_config('fencing.token', ${'5'}, true)`;
    await tx`UPDATE pors_t SET v = 'c' WHERE id = 1`;
  }));
  const t = fencing.typedError(e);
  ok(t instanceof fencing.StaleTokenError && t.offered === 5n && t.hwm === 20n && t.table === 'pors_t' && t.schema === 'public',
    'postgres: TF001 is a PostgresError; typedError() reads schema_name/table_name and DETAIL', { name: t && t.name, table: t && t.table });
  const u = await sql`SELECT fenced_update('pors_t', ${21n}, ${sql.json({ id: 1 })}, ${sql.json({ v: 'd' })})::int AS n`;
  ok(u[0].n === 1, 'postgres: fenced_update() with sql.json() key and changes', u[0]);
  const s = await caught(async () => { await sql`SET fencing.token = '30'`; await sql`UPDATE pors_t SET v = 'x' WHERE id = 1`; });
  ok(s && s.code === 'TF002', 'postgres: a session SET fencing.token is refused (TF002)', s && s.message);
  await sql.end();
}

async function sequelize(oids) {
  // Sequelize installs its own type parser lookup on every connection and
  // falls back to pg.types: register there (global to the process).
  pg.types.setTypeParser(oids.oid, fencing.parseToken);
  const db = new Sequelize({ dialect: 'postgres', host: process.env.PGHOST, port: Number(process.env.PGPORT),
    username: process.env.PGUSER, database: process.env.PGDATABASE, logging: false });
  const Item = db.define('Item', {
    sku: { type: DataTypes.TEXT, primaryKey: true },
    stock: DataTypes.INTEGER,
    fence: { type: 'fencing_token' },
  }, { tableName: 'seq_items', timestamps: false, version: true });
  await db.query('DROP TABLE IF EXISTS seq_items');
  await Item.sync();
  const underToken = (token, fn) => db.transaction(async (t) => {
    await db.query("SELECT set_config('fencing.token', :tok, true)", { replacements: { tok: fencing.tokenText(token) }, transaction: t });
    return fn(t);
  });
  await underToken(10n, (t) => Item.create({ sku: 'a', stock: 5 }, { transaction: t }));
  const it = await Item.findByPk('a');
  await underToken(11n, async (t) => { it.stock = 4; await it.save({ transaction: t }); });
  await underToken(12n, async (t) => { it.stock = 3; await it.save({ transaction: t }); });
  const r = await Item.findByPk('a');
  ok(r.fence === 12n && r.version === 2 && r.stock === 3, 'Sequelize (version: true): saves in a transaction with set_config(..., true) are fenced, tokens BigInt via pg.types', r.get());
  const e = await caught(() => underToken(5n, async (t) => { r.stock = 99; await r.save({ transaction: t }); }));
  const t = fencing.typedError(e && e.original);
  ok(t instanceof fencing.StaleTokenError && t.offered === 5n && t.hwm === 12n && t.table === 'seq_items', 'Sequelize: a stale save is a SequelizeDatabaseError whose .original typedError() turns into StaleTokenError', e && e.name);
  const copy = await Item.findByPk('a');
  await underToken(13n, async (tx) => { copy.stock = 2; await copy.save({ transaction: tx }); });
  const old = await caught(() => underToken(14n, async (tx) => { it.stock = 1; await it.save({ transaction: tx }); }));
  ok(old && old.name === 'SequelizeOptimisticLockError', 'Sequelize: version: true still catches an instance saved from an old read', old && old.name);
  const bare = await caught(async () => { const x = await Item.findByPk('a'); x.stock = 0; await x.save(); });
  ok(bare && bare.original && bare.original.code === 'TF002', 'Sequelize: a save outside such a transaction is refused (TF002)', bare && bare.message);
  const explicit = await caught(() => underToken(20n, async (tx) => {
    const x = await Item.findByPk('a', { transaction: tx }); x.fence = 19n; x.stock = 7; await x.save({ transaction: tx });
  }));
  ok(explicit && explicit.original && explicit.original.code === '22023', 'Sequelize: setting the fence attribute to another token than fencing.token is refused (22023)', explicit && explicit.message);
  await underToken(fencing.MAX_TOKEN, async (tx) => { const x = await Item.findByPk('a', { transaction: tx }); x.stock = 8; await x.save({ transaction: tx }); });
  const m = await Item.findByPk('a');
  ok(m.fence === fencing.MAX_TOKEN, 'Sequelize: the largest token read back exactly', m.get());
  await db.close();
}

async function main() {
  const app = await fencing.connect({});
  const oids = await fencing.tokenOids(app);
  await app.end();
  for (const step of [porsager, sequelize]) {
    try {
      await step(step === porsager ? oids.oid : oids);
    } catch (err) {
      ok(false, `${step.name}: unexpected ${err.name}: ${err.message}`);
    }
  }
  process.exit(failures === 0 ? 0 : 1);
}
main();
