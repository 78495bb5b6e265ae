// pg-fencing: leases and fenced writes for the fencing PostgreSQL extension,
// over node-postgres (`pg`).
//
// Tokens are BigInt: a Number loses integers above 2^53 and 9223372036854775807
// is a valid token. They go to the server as decimal text and come back
// through a text-format type parser registered for fencing_token's OID, which
// is looked up per connection (it differs from database to database).
//
// node-postgres decodes every DataRow field as a UTF-8 string, whatever the
// result format, so with `binary: true` an int8 or a fencing_token arrives
// mangled (any byte above 0x7f). Clients in binary mode are refused here:
// text mode is the supported one.
'use strict';

const { EventEmitter } = require('events');
const { performance } = require('perf_hooks');

const MAX_TOKEN = 9223372036854775807n;
const STALE_TOKEN = 'TF001';
const TOKEN_REQUIRED = 'TF002';

// ---------------------------------------------------------------- errors

/** A write offered a token below the high-water mark (or equal to it, in strict mode). */
class StaleTokenError extends Error {
  constructor(message, fields = {}) {
    super(message);
    this.name = 'StaleTokenError';
    this.code = STALE_TOKEN;
    this.schema = fields.schema ?? null;
    this.table = fields.table ?? null;
    this.key = fields.key ?? null;
    this.offered = fields.offered ?? null;
    this.hwm = fields.hwm ?? null;
    this.strict = fields.strict ?? null;
    this.detail = fields.detail ?? null;
    this.hint = fields.hint ?? null;
    if (fields.cause !== undefined) this.cause = fields.cause;
  }
}

/** A protected table was written without a token (or with a session-level one). */
class TokenRequiredError extends Error {
  constructor(message, fields = {}) {
    super(message);
    this.name = 'TokenRequiredError';
    this.code = TOKEN_REQUIRED;
    this.schema = fields.schema ?? null;
    this.table = fields.table ?? null;
    this.detail = fields.detail ?? null;
    this.hint = fields.hint ?? null;
    if (fields.cause !== undefined) this.cause = fields.cause;
  }
}

/**
 * The lease was declared lost: a renewal was refused (reason 'refused'), no
 * renewal was confirmed within its safe time (reason 'expired'), or another
 * holder took it over (reason 'takeover', a LeaseTakenOverError).
 */
class LeaseLostError extends Error {
  constructor(message, fields = {}) {
    super(message);
    this.name = 'LeaseLostError';
    this.code = 'LEASE_LOST';
    this.resources = fields.resources ?? null;
    this.tokens = fields.tokens ?? null;
    this.reason = fields.reason ?? null;
  }
}

/**
 * A write under the lease was cut off by a takeover: another holder's
 * fencing_acquire ended its backend (SQLSTATE TF003; or 57P01 once the lease
 * was already lost, CONTRACT.md section 4a); the write rolled back. A
 * LeaseLostError with reason 'takeover'; `sqlstate` the server's code and
 * `cause` the driver's error.
 */
class LeaseTakenOverError extends LeaseLostError {
  constructor(message, fields = {}) {
    super(message, { ...fields, reason: 'takeover' });
    this.name = 'LeaseTakenOverError';
    this.code = 'LEASE_TAKEN_OVER';
    this.sqlstate = fields.sqlstate ?? null;
    if (fields.cause !== undefined) this.cause = fields.cause;
  }
}

/** The lease was released or closed: nothing starts or commits under it any more. Not a LeaseLostError. */
class LeaseClosedError extends Error {
  constructor(message, fields = {}) {
    super(message);
    this.name = 'LeaseClosedError';
    this.code = 'LEASE_CLOSED';
    this.resources = fields.resources ?? null;
    this.tokens = fields.tokens ?? null;
  }
}

/**
 * withToken() was given a client inside a transaction: the library never
 * joins, commits or rolls back the caller's transaction.
 */
class TransactionInProgressError extends Error {
  constructor(message) {
    super(message);
    this.name = 'TransactionInProgressError';
    this.code = 'TRANSACTION_IN_PROGRESS';
  }
}

/** acquire() did not get the lease within its wait. */
class LeaseNotAcquiredError extends Error {
  constructor(message, fields = {}) {
    super(message);
    this.name = 'LeaseNotAcquiredError';
    this.code = 'LEASE_NOT_ACQUIRED';
    this.resources = fields.resources ?? null;
  }
}

/**
 * A statement inside withToken() failed and fn went on without rethrowing (a
 * caught StaleTokenError, say): the server had aborted the transaction and
 * answered its COMMIT with ROLLBACK, so nothing of fn's writes was committed.
 */
class TransactionAbortedError extends Error {
  constructor(message) {
    super(message);
    this.name = 'TransactionAbortedError';
    this.code = 'TRANSACTION_ABORTED';
  }
}

// TF001's DETAIL, from its end (a key's text may itself hold ": "):
//   "<Key (id)=(5)>: offered token T is below the high-water mark H."
//   "<...>: offered token T is not above the high-water mark H (strict: ...)."
const STALE_DETAIL =
  /^([\s\S]*): offered token (\d+) is (below|not above) the high-water mark (\d+)(?: \(strict[^)]*\))?\.$/;

/** Parses TF001's DETAIL into { key, offered, hwm, strict }, or null. */
function parseStaleDetail(detail) {
  const m = STALE_DETAIL.exec(detail || '');
  if (!m) return null;
  return { key: m[1], offered: BigInt(m[2]), hwm: BigInt(m[4]), strict: m[3] === 'not above' };
}

/**
 * The typed error for a driver error: StaleTokenError for TF001,
 * TokenRequiredError for TF002, anything else unchanged.
 */
function typedError(err) {
  if (!err || typeof err !== 'object') return err;
  // node-postgres names the fields schema and table; postgres (porsager)
  // schema_name and table_name.
  const schema = err.schema ?? err.schema_name;
  const table = err.table ?? err.table_name;
  if (err.code === STALE_TOKEN && !(err instanceof StaleTokenError)) {
    const d = parseStaleDetail(err.detail) || {};
    return new StaleTokenError(err.message, {
      schema, table, key: d.key, offered: d.offered, hwm: d.hwm,
      strict: d.strict, detail: err.detail, hint: err.hint, cause: err,
    });
  }
  if (err.code === TOKEN_REQUIRED && !(err instanceof TokenRequiredError)) {
    return new TokenRequiredError(err.message, {
      schema, table, detail: err.detail, hint: err.hint, cause: err,
    });
  }
  return err;
}

// ---------------------------------------------------------------- codecs

/** A token parameter as decimal text; accepts BigInt, a safe integer Number or a decimal string. */
function tokenText(value) {
  let big;
  if (typeof value === 'bigint') big = value;
  else if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new RangeError(`token ${value} is not a safe integer: pass a BigInt or a string`);
    big = BigInt(value);
  } else if (typeof value === 'string') {
    if (!/^[0-9]+$/.test(value)) throw new TypeError(`token ${JSON.stringify(value)} is not a decimal integer`);
    big = BigInt(value);
  } else if (value instanceof Lease) {
    return tokenText(value.token);
  } else {
    throw new TypeError(`a token must be a BigInt, number or string, not ${typeof value}`);
  }
  if (big < 0n || big > MAX_TOKEN) throw new RangeError(`token ${big} is outside 0 ... ${MAX_TOKEN}`);
  return big.toString();
}

function parseToken(text) {
  return text === null ? null : BigInt(text);
}

// A one-dimensional fencing_token[] in text form: {1,2,NULL}.
function parseTokenArray(text) {
  if (text === null) return null;
  const inner = text.replace(/^\{|\}$/g, '');
  if (inner === '') return [];
  return inner.split(',').map((x) => (x === 'NULL' ? null : BigInt(x)));
}

const TYPES_SQL = `SELECT t.oid, t.typarray
  FROM pg_catalog.pg_type t JOIN pg_catalog.pg_extension e ON e.extnamespace OPERATOR(pg_catalog.=) t.typnamespace
 WHERE e.extname OPERATOR(pg_catalog.=) 'fencing' AND t.typname OPERATOR(pg_catalog.=) 'fencing_token'`;

const REGISTERED = Symbol('pg-fencing.registered');
const TRACKED = Symbol('pg-fencing.tracked');
const BROKEN = Symbol('pg-fencing.broken');
const TX_STATUS = Symbol('pg-fencing.txStatus');

function refuseBinary(client) {
  if (client.binary) {
    throw new Error('pg-fencing: node-postgres decodes binary results as text and mangles int8 and ' +
      'fencing_token values; use the client in text mode (binary: false)');
  }
}

/** The OIDs of fencing_token and fencing_token[] in the client's database. */
async function tokenOids(client) {
  const r = await client.query(TYPES_SQL);
  if (r.rows.length === 0) throw new Error('pg-fencing: the fencing extension is not installed in this database');
  return { oid: Number(r.rows[0].oid), arrayOid: Number(r.rows[0].typarray) };
}

/**
 * Registers the fencing_token parsers (BigInt, and arrays of BigInt) on a
 * connected client, and tracks its transaction status. Idempotent.
 */
async function register(client) {
  refuseBinary(client);
  if (client[REGISTERED]) return client[REGISTERED];
  // The transaction status from every ReadyForQuery, the type lookup's own
  // included: a client registered inside the caller's transaction is 'T'.
  if (!client[TRACKED] && client.connection && typeof client.connection.on === 'function') {
    client[TRACKED] = true;
    client.connection.on('readyForQuery', (msg) => { client[TX_STATUS] = msg.status; });
  }
  const oids = await tokenOids(client);
  client.setTypeParser(oids.oid, 'text', parseToken);
  client.setTypeParser(oids.arrayOid, 'text', parseTokenArray);
  client[REGISTERED] = oids;
  return oids;
}

/**
 * A `types` object for `new pg.Pool({ types })` or `new pg.Client({ types })`,
 * with fencing_token parsed as BigInt: `types(await tokenOids(client))`.
 */
function typesFor(oids, base = require('pg').types) {
  return {
    getTypeParser(oid, format) {
      if (format !== 'binary') {
        if (oid === oids.oid) return parseToken;
        if (oid === oids.arrayOid) return parseTokenArray;
      }
      return base.getTypeParser(oid, format);
    },
  };
}

/** A connected pg.Client with the fencing types registered. */
async function connect(config) {
  const { Client } = require('pg');
  const client = config instanceof Client ? config : new Client(config);
  refuseBinary(client);
  // Until the caller has the client, nobody else listens for 'error': a FATAL
  // arriving between two statements (a pooler's "server conn crashed?" after a
  // ReadyForQuery, a terminated backend) would end the process. It fails
  // connect() instead.
  let failed = null;
  const onError = (err) => { failed = failed || err; };
  client.on('error', onError);
  try {
    await client.connect();
    await register(client);
    if (failed) throw failed;
  } catch (err) {
    await client.end().catch(() => {});
    throw failed || err; // the server's FATAL rather than pg's "not queryable"
  } finally {
    client.removeListener('error', onError);
  }
  return client;
}

// ---------------------------------------------------------------- time

// An interval parameter from milliseconds.
function interval(ms) {
  if (ms === null || ms === undefined) return null;
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`a duration must be a non-negative number of milliseconds, not ${ms}`);
  return `${ms / 1000} seconds`;
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---------------------------------------------------------------- leases

// A parameter as an SQL literal, for timedQuery's simple-query string.
function literal(client, v) {
  if (v === null || v === undefined) return 'NULL';
  if (Array.isArray(v)) return `ARRAY[${v.map((x) => literal(client, x)).join(', ')}]::pg_catalog.text[]`;
  return client.escapeLiteral(String(v));
}

// One statement bounded by statement_timeout for its own implicit
// transaction only: "SET LOCAL statement_timeout = N; <statement>" as ONE
// simple-query string (parameters inlined as literals), so the bound ends
// with the statement, nothing stays on the connection (behind a pooler it
// would reach other applications), and it costs one round trip.
async function timedQuery(client, ms, text, values) {
  const sql = text.replace(/\$(\d+)/g, (_, i) => literal(client, values[Number(i) - 1]));
  const results = await client.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(ms))}; ${sql}`);
  return results[results.length - 1];
}

/**
 * A lease on one or more resources, renewed in the background on a
 * connection of its own (clients/CONTRACT.md). `lost` (an AbortSignal)
 * aborts, and the 'lost' event fires, once, as soon as a renewal is refused
 * (reason 'refused') or when no renewal was confirmed within ttl - safety ms
 * of the send of the call that last set its expiry (reason 'expired'):
 * before the server lets another holder in, and never before the lease may
 * have expired there. release()/close() end it without the lost signal:
 * `state` is then 'closed' and writes throw LeaseClosedError.
 */
class Lease extends EventEmitter {
  constructor(client, opts, tokens, sentAt) {
    super();
    this.client = client;
    this.resources = opts.resources;
    this.holder = opts.holder;
    this.namespace = opts.namespace;
    this.ttl = opts.ttl;
    this.tokens = tokens;
    this.token = tokens[0];
    this.renewEvery = opts.renewEvery ?? this.ttl / 3;
    this.jitter = opts.jitter ?? 0.2;
    this.safety = opts.safety ?? Math.max(50, this.ttl / 5);
    if (this.renewEvery >= this.ttl - this.safety) {
      throw new RangeError('renewEvery and safety must leave time to renew before the TTL ends');
    }
    this.renewals = 0;
    this.reconnects = 0;
    this.statementTimeout = opts.statementTimeout ?? Math.max(1000, opts.ttl / 3);
    this.lostReason = null;
    this.released = false;
    this._controller = new AbortController();
    this.lost = this._controller.signal;
    this._renewing = null;
    this._deadline = sentAt + this.ttl; // performance.now() when the server's lease may end
    if (typeof opts.onLost === 'function') this.on('lost', opts.onLost);
    // An 'error' listener keeps a renewal error from crashing the process.
    this.on('error', () => {});
    this._connection = opts.connection;
    this._ext = opts.ext; // the extension's schema, quoted
    this._watch(client);
  }

  // The timers, once the acquire settled its deadline.
  _start() {
    this._armDeadline();
    this._scheduleRenewal();
  }

  /** 'held', 'lost' or 'closed' (closed wins over lost). Reading it checks the deadline. */
  get state() {
    if (this.released) return 'closed';
    return this.isLost ? 'lost' : 'held';
  }

  /** Whether the lease was declared lost (checks the deadline first); stays true after a later close. */
  get isLost() {
    if (!this.lost.aborted && !this.released && performance.now() >= this._deadline - this.safety) {
      this._lose('expired');
    }
    return this.lost.aborted;
  }

  /** Whether release() or close() was called. */
  get isClosed() {
    return this.released;
  }

  /** Throws LeaseClosedError after release/close, LeaseLostError once lost. */
  throwIfLost() {
    if (this.released) {
      throw new LeaseClosedError(`lease on ${this.resources.join(', ')} was released`, {
        resources: this.resources, tokens: this.tokens,
      });
    }
    if (this.isLost) throw this.lost.reason;
  }

  /**
   * The LeaseTakenOverError for a driver error that ended a write under this
   * lease, else null (CONTRACT.md section 4a). TF003: the server says so; the
   * lease is declared lost (reason 'takeover') unless it already was. 57P01
   * only when the lease is already lost (deadline checked first): on a held
   * lease it is a plain shutdown or pg_terminate_backend().
   */
  takenOver(err) {
    const code = err && err.code;
    if (code === 'TF003') this._lose('takeover');
    else if (code !== '57P01' || !this.isLost) return null;
    return new LeaseTakenOverError(`lease on ${this.resources.join(', ')} was taken over: the server ended the write (${code})`, {
      resources: this.resources, tokens: this.tokens, sqlstate: code, cause: err,
    });
  }

  /** The token of one of the lease's resources (default: the first). */
  tokenFor(resource) {
    if (resource === undefined) return this.token;
    const i = this.resources.indexOf(resource);
    if (i < 0) throw new RangeError(`the lease holds no resource ${JSON.stringify(resource)}`);
    return this.tokens[i];
  }

  /** Milliseconds left before the lease may end, by this process's clock (<= 0: lost). */
  remaining() {
    return this._deadline - this.safety - performance.now();
  }

  // A broken connection is replaced at the next renewal.
  _watch(client) {
    client.on('error', (err) => { client[BROKEN] = true; this.emit('error', err); });
    client.on('end', () => { client[BROKEN] = true; });
  }

  // A new connection for renewals when the old one broke (not when the
  // caller passed a pg.Client instance, which cannot be reopened).
  async _reconnect() {
    if (!this.client[BROKEN] || this._connection === undefined || isClient(this._connection)) return;
    const client = await leaseClient(this._connection);
    this._watch(client);
    const old = this.client;
    this.client = client;
    old.end().catch(() => {});
    this.reconnects += 1;
  }

  _armDeadline() {
    clearTimeout(this._deadlineTimer);
    const ms = Math.max(0, this._deadline - this.safety - performance.now());
    this._deadlineTimer = setTimeout(() => {
      if (performance.now() >= this._deadline - this.safety) this._lose('expired');
      else this._armDeadline();
    }, ms);
  }

  _scheduleRenewal(ms) {
    clearTimeout(this._renewTimer);
    if (ms === undefined) {
      const spread = this.renewEvery * this.jitter;
      ms = Math.max(1, this.renewEvery - spread + Math.random() * 2 * spread);
    }
    this._renewTimer = setTimeout(() => {
      this._renewing = this._renewOnce().then((ok) => {
        this._renewing = null;
        // A failed renewal (broken connection, restart) is retried soon.
        if (this.state === 'held') this._scheduleRenewal(ok ? undefined : this.renewEvery / 8);
      });
    }, ms);
  }

  _renewSql(fn) {
    return `SELECT pg_catalog.bool_and(@ext@.${fn}) AS ok
           FROM ROWS FROM (pg_catalog.unnest($1::text[]), pg_catalog.unnest($2::text[])) AS u(r, t)`.replace(/@ext@/g, this._ext);
  }

  // One renewal; true when it was confirmed (or the lease ended meanwhile),
  // false after an error.
  // atOnce: right after the acquire, before its deadline is settled.
  async _renewOnce(atOnce = false) {
    if (!atOnce && this.state !== 'held') return true;
    try {
      await this._reconnect();
      const sentAt = performance.now();
      const r = await timedQuery(this.client, atOnce ? this.ttl - this.safety : Math.max(1, this.remaining()),
        this._renewSql(`fencing_renew(u.r, u.t::${this._ext}.fencing_token, $3::interval, $4)`),
        [this.resources, this.tokens.map(String), interval(this.ttl), this.namespace]);
      if (this.released || this.lost.aborted) return true;
      if (r.rows[0].ok !== true) {
        this._lose('refused');
        return true;
      }
      this.renewals += 1;
      this._deadline = sentAt + this.ttl;
      this._armDeadline();
      this.emit('renewed', this.renewals);
      return true;
    } catch (err) {
      // Retried; the deadline timer decides when it is lost.
      this.emit('error', err);
      return false;
    }
  }

  _lose(reason) {
    if (this.lost.aborted || this.released) return;
    this.lostReason = reason;
    clearTimeout(this._renewTimer);
    clearTimeout(this._deadlineTimer);
    const why = reason === 'refused' ? 'the server refused the renewal (the lease expired or was taken)'
      : reason === 'takeover' ? "another holder's acquire took it over and ended a write under its token"
        : 'no renewal was confirmed within its safe time';
    const err = new LeaseLostError(`lease on ${this.resources.join(', ')} lost: ${why}`, {
      resources: this.resources, tokens: this.tokens, reason,
    });
    this._controller.abort(err);
    this.emit('lost', err);
  }

  /**
   * Stops renewing, ends the lease on the server and closes its connection.
   * true when the server ended a live lease of these tokens; false otherwise
   * (a lost lease, released before, or the server unreachable: the lease then
   * ends at its TTL). Never throws for those. A lost lease is released too
   * (its token cannot end another holder's lease) and stays lost.
   */
  async release() {
    if (this.released) return false;
    this.released = true;
    clearTimeout(this._renewTimer);
    clearTimeout(this._deadlineTimer);
    if (this._renewing) await this._renewing.catch(() => {});
    let ok = false;
    try {
      await this._reconnect();
      const r = await timedQuery(this.client, this.statementTimeout,
        this._renewSql(`fencing_release(u.r, u.t::${this._ext}.fencing_token, $3)`),
        [this.resources, this.tokens.map(String), this.namespace]);
      ok = r.rows[0].ok === true;
    } catch (err) {
      this.emit('error', err);
    } finally {
      await this.client.end().catch(() => {});
    }
    return ok;
  }

  /** Same as release(); for `await using lease = await Lease.acquire(...)`. */
  async close() {
    await this.release();
  }

  /**
   * Runs fn(client) in a transaction on `client` (the application's, not the
   * lease's) with this lease's token (see withToken); refuses when lost or closed.
   */
  transaction(client, fn, opts = {}) {
    return withToken(client, this, fn, opts);
  }
}
if (typeof Symbol.asyncDispose === 'symbol') {
  Lease.prototype[Symbol.asyncDispose] = function asyncDispose() { return this.release(); };
}

async function extSchema(client) {
  const r = await client.query(`SELECT pg_catalog.quote_ident(n.nspname) AS s
      FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
     WHERE e.extname OPERATOR(pg_catalog.=) 'fencing'`);
  if (r.rows.length === 0) throw new Error('pg-fencing: the fencing extension is not installed in this database');
  return r.rows[0].s;
}

function leaseOptions(opts, resources) {
  if (!opts || typeof opts.holder !== 'string') throw new TypeError('holder (a string) is required');
  if (!Number.isFinite(opts.ttl) || opts.ttl <= 0) throw new RangeError('ttl (milliseconds, > 0) is required');
  if (!Array.isArray(resources) || resources.length === 0 || resources.some((r) => typeof r !== 'string')) {
    throw new TypeError('resources must be a non-empty array of strings');
  }
  return { ...opts, resources, namespace: opts.namespace ?? 'default' };
}

function isClient(x) {
  return x !== null && typeof x === 'object' && typeof x.query === 'function' && typeof x.connect === 'function';
}

// Opens the lease's own connection (from a config object or string, or a
// function returning an unconnected pg.Client) and registers the types.
async function leaseClient(connection) {
  const client = await connect(typeof connection === 'function' ? await connection() : connection);
  // The lease's own connection, from its first statement on (the Lease
  // watches it only once acquired): an 'error' between statements marks it
  // broken, and the statement after it fails, instead of ending the process.
  client.on('error', () => { client[BROKEN] = true; });
  return client;
}

function missingFeature(err, what) {
  if (err && err.code === '42883') {
    const e = new Error(`${what} needs fencing 1.5 in this database: ALTER EXTENSION fencing UPDATE`);
    e.code = '55000';
    e.hint = 'ALTER EXTENSION fencing UPDATE';
    e.cause = err;
    return e;
  }
  return err;
}

async function acquireImpl(connection, opts, resources, required) {
  const o = leaseOptions(opts, resources);
  const client = await leaseClient(connection);
  let tokens;
  let sentAt;
  let ext;
  try {
    ext = await extSchema(client);
    // The acquire is bounded by its wait plus a margin, whatever blocks it.
    const bound = (o.wait ?? 0) + (o.acquireMargin ?? 5000);
    sentAt = performance.now();
    if (resources.length === 1 && !o.all) {
      const r = await timedQuery(client, bound,
        `SELECT ${ext}.fencing_acquire($1, $2, $3::interval, $4::interval, $5) AS t`,
        [resources[0], o.holder, interval(o.ttl), interval(o.wait), o.namespace]);
      tokens = r.rows[0].t === null ? null : [r.rows[0].t];
    } else {
      const r = await timedQuery(client, bound,
        `SELECT ${ext}.fencing_acquire_all($1::text[], $2, $3::interval, $4::interval, $5) AS t`,
        [resources, o.holder, interval(o.ttl), interval(o.wait), o.namespace]).catch((err) => {
        throw missingFeature(err, 'fencing_acquire_all()');
      });
      tokens = r.rows[0].t;
    }
    o.connection = connection;
  } catch (err) {
    await client.end().catch(() => {});
    if (err && err.code === '57014') tokens = null; // cancelled: nothing acquired
    else throw typedError(err);
  }
  if (tokens === null) {
    await client.end().catch(() => {});
    if (required) throw new LeaseNotAcquiredError(`lease on ${resources.join(', ')} not acquired`, { resources });
    return null;
  }
  const lease = new Lease(client, { ...o, ext }, tokens, sentAt);
  // A waited or slow grant happened at an unknown moment after the send:
  // renew at once and count from that renewal's send, so a lease the server
  // granted a full TTL is never declared lost early.
  if ((o.wait ?? 0) > 0 || performance.now() - sentAt > lease.safety / 2) {
    await lease._renewOnce(true);
    if (lease.lostReason === 'refused') {
      await lease.release();
      throw lease.lost.reason;
    }
  }
  lease._start();
  return lease;
}

/**
 * Acquires a lease on one resource: opts { resource, holder, ttl (ms),
 * wait (ms, optional), namespace, renewEvery, jitter, safety, onLost }.
 * Throws LeaseNotAcquiredError when another holder keeps it past `wait`.
 */
Lease.acquire = function acquire(connection, opts) {
  return acquireImpl(connection, opts, [opts && opts.resource], true);
};

/** As Lease.acquire, but resolves to null when the lease was not acquired. */
Lease.tryAcquire = function tryAcquire(connection, opts) {
  return acquireImpl(connection, opts, [opts && opts.resource], false);
};

/**
 * Acquires several resources at once, all or none (fencing_acquire_all):
 * opts as Lease.acquire with `resources` (string[]) instead of `resource`.
 * One Lease renews them all; lease.tokens[i] is resources[i]'s token.
 */
Lease.acquireAll = function acquireAll(connection, opts) {
  return acquireImpl(connection, { ...opts, all: true }, opts && opts.resources, opts ? opts.required !== false : true);
};

/** Runs fn(lease) under a lease and releases it afterwards, whatever happens. */
async function withLease(connection, opts, fn) {
  const lease = await Lease.acquire(connection, opts);
  try {
    return await fn(lease);
  } finally {
    await lease.release();
  }
}

// ---------------------------------------------------------------- writing under a token

/**
 * Runs fn(client) inside BEGIN ... COMMIT with fencing.token set for that
 * transaction only (SET LOCAL fencing.token = '<token>'), so none of its
 * statements can run unfenced and the token cannot outlive it on the
 * connection. `tokenOrLease` is a token or a Lease (opts.resource picks one
 * of an acquireAll lease's tokens): a lost lease is refused before BEGIN and
 * again before COMMIT (LeaseLostError, rolled back; LeaseClosedError once it
 * was released). A client inside a transaction is refused
 * (TransactionInProgressError): the caller's transaction is never committed. TF001
 * and TF002 come back as StaleTokenError and TokenRequiredError.
 */
async function withToken(client, tokenOrLease, fn, opts = {}) {
  refuseBinary(client);
  await register(client);
  const lease = tokenOrLease instanceof Lease ? tokenOrLease : null;
  if (lease) lease.throwIfLost();
  const token = tokenText(lease ? lease.tokenFor(opts.resource) : tokenOrLease);
  if (client[TX_STATUS] !== 'I') {
    throw new TransactionInProgressError('pg-fencing: withToken() needs a client outside a transaction: '
      + 'it never joins, commits or rolls back yours (commit first, or SET LOCAL fencing.token in your own transaction)');
  }
  await client.query('BEGIN');
  try {
    // A literal SET LOCAL, which Citus forwards to its workers (set_config()
    // it does not). SET takes no parameters: token is tokenText's decimal
    // digits, and a query without values goes over the simple protocol, so
    // nothing is prepared per token value.
    await client.query(`SET LOCAL fencing.token = '${token}'`);
    const result = await fn(client);
    if (lease) lease.throwIfLost();
    // An aborted transaction's COMMIT succeeds with the tag ROLLBACK.
    const commit = await client.query('COMMIT');
    if (commit.command === 'ROLLBACK') {
      throw new TransactionAbortedError('pg-fencing: a statement inside withToken() failed and its error was caught: '
        + 'the transaction was aborted and rolled back, nothing of it committed');
    }
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw (lease && lease.takenOver(err)) || typedError(err);
  }
}

async function tableInfo(client, table) {
  const r = await client.query(
    `SELECT n.nspname AS schema, c.relname AS table, p.strict
       FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
       LEFT JOIN fencing_protected p ON p.table_name OPERATOR(pg_catalog.=) c.oid
      WHERE c.oid OPERATOR(pg_catalog.=) $1::regclass`, [table]);
  return r.rows[0] || {};
}

// 0 rows from a fenced_*() call: stale (the key's HWM refuses the token) or
// no such row. The write was already judged atomically; this second read
// only names the reason.
async function diagnoseZero(client, table, token, key, what) {
  const h = await client.query('SELECT fencing_high_water($1::regclass, $2::jsonb) AS hwm', [table, JSON.stringify(key)]);
  const hwm = h.rows[0].hwm === null ? null : BigInt(h.rows[0].hwm);
  const offered = BigInt(token);
  if (hwm === null) return;
  const info = await tableInfo(client, table);
  const strict = info.strict === true;
  if (hwm > offered || (strict && hwm === offered)) {
    throw new StaleTokenError(`${what}: stale fencing token for table ${info.table}`, {
      schema: info.schema, table: info.table, key, offered, hwm, strict,
    });
  }
}

// The primary key columns' values of a row object.
async function primaryKeyOf(client, table, row) {
  const r = await client.query(
    `SELECT a.attname AS name
       FROM pg_catalog.pg_index i
       JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) i.indrelid AND a.attnum OPERATOR(pg_catalog.=) ANY (i.indkey)
      WHERE i.indrelid OPERATOR(pg_catalog.=) $1::regclass AND i.indisprimary`, [table]);
  const key = {};
  for (const { name } of r.rows) key[name] = row[name];
  return key;
}

function rowsWritten(r) {
  return Number(r.rows[0].n);
}

const RESULT_FNS = Symbol('pg-fencing.resultFunctions');

// Whether the database has fenced_*_result() (fencing 1.5), which report
// stale rows and their HWM in the same call; cached per client.
async function hasResultFunctions(client) {
  if (client[RESULT_FNS] === undefined) {
    const r = await client.query(`SELECT pg_catalog.count(*) OPERATOR(pg_catalog.=) 3 AS ok
        FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_extension e ON e.extnamespace OPERATOR(pg_catalog.=) p.pronamespace
       WHERE e.extname OPERATOR(pg_catalog.=) 'fencing'
         AND p.proname OPERATOR(pg_catalog.=) ANY ('{fenced_update_result,fenced_delete_result,fenced_upsert_result}')`);
    client[RESULT_FNS] = r.rows[0].ok === true;
  }
  return client[RESULT_FNS];
}

// One fenced_*() call. With fenced_*_result() a stale refusal is told from a
// missing row by the call itself; without it (an older extension version),
// 0 rows are diagnosed by a second read.
async function fencedCall(client, fn, args, params, token, opts, keyOf) {
  refuseBinary(client);
  if (opts.lease) opts.lease.throwIfLost();
  try {
    if (await hasResultFunctions(client)) {
      const r = await client.query(`SELECT written::text AS n, stale::text AS stale, hwm::text AS hwm FROM ${fn}_result(${args})`, params);
      const row = r.rows[0];
      if (BigInt(row.stale) > 0n && !opts.staleAsZero) {
        const info = await tableInfo(client, params[0]);
        throw new StaleTokenError(`${fn}: stale fencing token for table ${info.table}`, {
          schema: info.schema, table: info.table, key: await keyOf(), offered: BigInt(token),
          hwm: row.hwm === null ? null : BigInt(row.hwm), strict: info.strict === true,
        });
      }
      return Number(row.n);
    }
    const r = await client.query(`SELECT ${fn}(${args})::text AS n`, params);
    const n = rowsWritten(r);
    if (n === 0 && !opts.staleAsZero) await diagnoseZero(client, params[0], token, await keyOf(), fn);
    return n;
  } catch (err) {
    throw (opts.lease && opts.lease.takenOver(err)) || typedError(err);
  }
}

// A Lease passed as the token: its lost state is checked before the call.
function withLeaseOf(token, opts) {
  return token instanceof Lease ? { ...opts, lease: token } : opts;
}

/**
 * fenced_update(table, token, key, changes): the number of rows written.
 * `token` may be a Lease: a lost one is refused (LeaseLostError).
 * A stale token throws StaleTokenError; no such row returns 0
 * (opts.staleAsZero: 0 for both).
 */
function fencedUpdate(client, table, token, key, changes, opts = {}) {
  const t = tokenText(token);
  opts = withLeaseOf(token, opts);
  return fencedCall(client, 'fenced_update', '$1::regclass, $2, $3::jsonb, $4::jsonb',
    [table, t, JSON.stringify(key), JSON.stringify(changes)], t, opts, async () => key);
}

/** fenced_delete(table, token, key): as fencedUpdate. */
function fencedDelete(client, table, token, key, opts = {}) {
  const t = tokenText(token);
  opts = withLeaseOf(token, opts);
  return fencedCall(client, 'fenced_delete', '$1::regclass, $2, $3::jsonb',
    [table, t, JSON.stringify(key)], t, opts, async () => key);
}

/**
 * fenced_upsert(table, token, row): 1 when written; a stale token throws
 * StaleTokenError (its key: opts.key, else the row's primary key columns).
 */
function fencedUpsert(client, table, token, row, opts = {}) {
  const t = tokenText(token);
  opts = withLeaseOf(token, opts);
  return fencedCall(client, 'fenced_upsert', '$1::regclass, $2, $3::jsonb',
    [table, t, JSON.stringify(row)], t, opts, async () => opts.key ?? (await primaryKeyOf(client, table, row)));
}

/** fencing_check(resource, token, namespace): whether the token is still current. A check, not a fence. */
async function check(client, resource, token, namespace = 'default') {
  try {
    const r = await client.query('SELECT fencing_check($1, $2, $3) AS ok', [resource, tokenText(token), namespace]);
    return r.rows[0].ok === true;
  } catch (err) {
    throw missingFeature(err, 'fencing_check()');
  }
}

module.exports = {
  MAX_TOKEN,
  StaleTokenError,
  TokenRequiredError,
  LeaseLostError,
  LeaseClosedError,
  LeaseTakenOverError,
  LeaseNotAcquiredError,
  TransactionAbortedError,
  TransactionInProgressError,
  Lease,
  acquire: Lease.acquire,
  tryAcquire: Lease.tryAcquire,
  acquireAll: Lease.acquireAll,
  withLease,
  withToken,
  fencedUpdate,
  fencedDelete,
  fencedUpsert,
  check,
  connect,
  register,
  tokenOids,
  typesFor,
  typedError,
  parseStaleDetail,
  tokenText,
  parseToken,
  parseTokenArray,
  sleep,
};
