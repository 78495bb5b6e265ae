// Compiled with tsc --noEmit by test.sh: index.d.ts describes the API as used here.
import { Client, Pool, PoolClient } from 'pg';
import * as fencing from '..';

async function use(app: Client): Promise<void> {
  const lease: fencing.Lease = await fencing.acquire({}, { resource: 'r', holder: 'h', ttl: 1000, wait: 10 });
  const t: bigint = lease.token;
  const signal: AbortSignal = lease.lost;
  lease.on('lost', (err: fencing.LeaseLostError) => { const r: string | null = err.reason; void r; });
  const n: number = await lease.transaction(app, async (c) => (await c.query('SELECT 1')).rowCount ?? 0);
  const w: number = await fencing.fencedUpdate(app, 't', lease, { id: 1 }, { v: 2 }, { staleAsZero: true });
  const ok: boolean = await fencing.check(app, 'r', t);
  const many: fencing.Lease | null = await fencing.acquireAll({}, { resources: ['a', 'b'], holder: 'h', ttl: 1000 });
  const ts: bigint[] | undefined = many?.tokens;
  await fencing.withToken(app, 34, async () => undefined);
  await fencing.withLease('postgres://', { resource: 'r', holder: 'h', ttl: 1000 }, async (l) => l.token);
  try { await lease.release(); } catch (e) {
    if (e instanceof fencing.StaleTokenError) { const h: bigint | null = e.hwm; void h; }
  }
  const max: bigint = fencing.MAX_TOKEN;
  void [signal, n, w, ok, ts, max];
}
void use;

// A pg.Pool's clients are accepted wherever a client is.
async function pooled(pool: Pool, lease: fencing.Lease): Promise<void> {
  const pc: PoolClient = await pool.connect();
  try {
    await fencing.register(pc);
    await fencing.withToken(pc, lease, async (c: PoolClient) => { await c.query('SELECT 1'); });
    await lease.transaction(pc, async (c) => c.query('SELECT 1'));
    const w: number = await fencing.fencedUpdate(pc, 't', lease, { id: 1 }, { v: 2 });
    const state: 'held' | 'lost' | 'closed' = lease.state;
    const closed: boolean = lease.isClosed;
    void [w, state, closed];
  } catch (e) {
    if (e instanceof fencing.LeaseClosedError || e instanceof fencing.TransactionInProgressError) throw e;
  } finally {
    pc.release();
  }
}
void pooled;
