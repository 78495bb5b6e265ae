// Type declarations for pg-fencing (plain JavaScript, index.js).
import { EventEmitter } from 'events';
import type { Client, ClientBase, ClientConfig, CustomTypesConfig } from 'pg';

/** A connected node-postgres client: a pg.Client, or a pg.Pool's PoolClient (pool.connect()). */
export type AnyClient = ClientBase;

/** 9223372036854775807n, the largest fencing token. */
export const MAX_TOKEN: bigint;

/** What a token parameter may be: a BigInt, a safe integer Number, a decimal string, or a Lease (its token). */
export type TokenLike = bigint | number | string | Lease;

/** Where a lease's own connection comes from: a pg config, a connection string, or a factory of unconnected clients. */
export type Connection = ClientConfig | string | (() => Client | Promise<Client>);

/** TF001: a write offered a token below the high-water mark (or equal to it, in strict mode). */
export class StaleTokenError extends Error {
  code: 'TF001';
  /** From the error's schema field (or the table's, for a fenced_*() call). */
  schema: string | null;
  /** From the error's table field. */
  table: string | null;
  /** DETAIL's key text ("Key (id)=(5)", "Resource 'r' (namespace 'default')", "Table-wide"); for fenced_*() calls the key object. */
  key: string | Record<string, unknown> | null;
  offered: bigint | null;
  hwm: bigint | null;
  strict: boolean | null;
  detail: string | null;
  hint: string | null;
}

/** TF002: a protected table was written without a transaction-level token. */
export class TokenRequiredError extends Error {
  code: 'TF002';
  schema: string | null;
  table: string | null;
  detail: string | null;
  hint: string | null;
}

/** The lease was declared lost: a renewal was refused ('refused'), none was confirmed within its safe time ('expired'), or another holder took it over ('takeover'). */
export class LeaseLostError extends Error {
  code: 'LEASE_LOST' | 'LEASE_TAKEN_OVER';
  resources: string[] | null;
  tokens: bigint[] | null;
  reason: 'refused' | 'expired' | 'takeover' | null;
}

/** A write under the lease cut off by a takeover (SQLSTATE TF003, or 57P01 once the lease was lost); it rolled back. */
export class LeaseTakenOverError extends LeaseLostError {
  code: 'LEASE_TAKEN_OVER';
  reason: 'takeover';
  sqlstate: 'TF003' | '57P01' | null;
  cause?: unknown;
}

/** The lease was released or closed: nothing starts or commits under it. Not a LeaseLostError. */
export class LeaseClosedError extends Error {
  code: 'LEASE_CLOSED';
  resources: string[] | null;
  tokens: bigint[] | null;
}

/** withToken() was given a client inside a transaction: the library never commits the caller's transaction. */
export class TransactionInProgressError extends Error {
  code: 'TRANSACTION_IN_PROGRESS';
}

/** A statement inside withToken() failed, its error was caught, and the COMMIT rolled back. */
export class TransactionAbortedError extends Error {
  code: 'TRANSACTION_ABORTED';
}

/** acquire() did not get the lease within its wait. */
export class LeaseNotAcquiredError extends Error {
  code: 'LEASE_NOT_ACQUIRED';
  resources: string[] | null;
}

export interface LeaseOptions {
  holder: string;
  /** Lease time to live, milliseconds. */
  ttl: number;
  /** How long acquire waits for a held lease, milliseconds (default: not at all). */
  wait?: number;
  namespace?: string;
  /** Renewal period, ms (default ttl / 3), spread by ±jitter. */
  renewEvery?: number;
  /** Fraction of renewEvery (default 0.2). */
  jitter?: number;
  /** The lost signal fires this many ms before the TTL would end without a renewal (default ttl / 5). */
  safety?: number;
  /** Bound of a release, ms (default max(ttl / 3, 1000)); set per transaction, never for the session. */
  statementTimeout?: number;
  /** Added to wait as the acquire's bound, ms (default 5000). */
  acquireMargin?: number;
  onLost?: (err: LeaseLostError) => void;
}

export class Lease extends EventEmitter {
  /** The lease's own connection (renewals and release). */
  readonly client: Client;
  readonly resources: string[];
  readonly holder: string;
  readonly namespace: string;
  readonly ttl: number;
  /** tokens[0]. */
  readonly token: bigint;
  /** One per resource, in the order of resources. */
  readonly tokens: bigint[];
  /** Aborts (reason: a LeaseLostError) when the lease is declared lost; not on release/close. */
  readonly lost: AbortSignal;
  /** 'held', 'lost' or 'closed' (after release/close; wins over lost). */
  readonly state: 'held' | 'lost' | 'closed';
  /** Declared lost (checks the deadline first); stays true after a later close. */
  readonly isLost: boolean;
  /** release() or close() was called. */
  readonly isClosed: boolean;
  readonly lostReason: 'refused' | 'expired' | 'takeover' | null;
  readonly renewals: number;
  /** How many times a broken renewal connection was replaced. */
  readonly reconnects: number;
  /** Throws LeaseClosedError after release/close, LeaseLostError once lost. */
  throwIfLost(): void;
  /** The LeaseTakenOverError for a driver error that ended a write under this lease (TF003; 57P01 once lost), else null. */
  takenOver(err: unknown): LeaseTakenOverError | null;
  remaining(): number;
  /** true when the server ended a live lease of these tokens; false for a lost lease, a second call, or an unreachable server. Never throws for those. */
  release(): Promise<boolean>;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<boolean>;
  /** The token of one of the lease's resources (default: the first). */
  tokenFor(resource?: string): bigint;
  transaction<T, C extends ClientBase = ClientBase>(client: C, fn: (client: C) => Promise<T>, opts?: { resource?: string }): Promise<T>;
  on(event: 'lost', listener: (err: LeaseLostError) => void): this;
  on(event: 'renewed', listener: (renewals: number) => void): this;
  on(event: 'error', listener: (err: Error) => void): this;

  static acquire(connection: Connection, opts: LeaseOptions & { resource: string }): Promise<Lease>;
  static tryAcquire(connection: Connection, opts: LeaseOptions & { resource: string }): Promise<Lease | null>;
  /** All or none (fencing_acquire_all); resolves to null only with required: false. */
  static acquireAll(connection: Connection, opts: LeaseOptions & { resources: string[]; required?: boolean }): Promise<Lease | null>;
}

export const acquire: typeof Lease.acquire;
export const tryAcquire: typeof Lease.tryAcquire;
export const acquireAll: typeof Lease.acquireAll;
export function withLease<T>(connection: Connection, opts: LeaseOptions & { resource: string }, fn: (lease: Lease) => Promise<T>): Promise<T>;

export function withToken<T, C extends ClientBase = ClientBase>(client: C, tokenOrLease: TokenLike, fn: (client: C) => Promise<T>, opts?: { resource?: string }): Promise<T>;

export interface FencedOptions {
  /** Return 0 for a stale token instead of throwing StaleTokenError. */
  staleAsZero?: boolean;
}
export function fencedUpdate(client: ClientBase, table: string, token: TokenLike, key: object, changes: object, opts?: FencedOptions): Promise<number>;
export function fencedDelete(client: ClientBase, table: string, token: TokenLike, key: object, opts?: FencedOptions): Promise<number>;
export function fencedUpsert(client: ClientBase, table: string, token: TokenLike, row: object, opts?: FencedOptions & { key?: object }): Promise<number>;
/** fencing_check(): whether token is still current for resource. A check, not a fence. */
export function check(client: ClientBase, resource: string, token: TokenLike, namespace?: string): Promise<boolean>;

export interface TokenOids { oid: number; arrayOid: number; }
export function connect(config?: ClientConfig | string | Client): Promise<Client>;
export function register(client: ClientBase): Promise<TokenOids>;
export function tokenOids(client: ClientBase): Promise<TokenOids>;
export function typesFor(oids: TokenOids, base?: CustomTypesConfig): CustomTypesConfig;
export function typedError(err: unknown): unknown;
export function parseStaleDetail(detail: string | null | undefined): { key: string; offered: bigint; hwm: bigint; strict: boolean } | null;
export function tokenText(value: TokenLike): string;
export function parseToken(text: string | null): bigint | null;
export function parseTokenArray(text: string | null): (bigint | null)[] | null;
export function sleep(ms: number): Promise<void>;
