// tsc with "module": "nodenext" (tsconfig.esm.json): the package's ESM typings
// (exports map -> index.d.mts), imported by name as an application would.
import { Pool } from 'pg';
import fencing, { Lease, LeaseClosedError, withToken, fencedUpdate, MAX_TOKEN } from 'pg-fencing';

export async function esmUse(pool: Pool): Promise<bigint> {
  const lease: Lease = await fencing.acquire({}, { resource: 'r', holder: 'h', ttl: 1000 });
  const pc = await pool.connect();
  try {
    await withToken(pc, lease, async (c) => c.query('SELECT 1'));
    await fencedUpdate(pc, 't', lease, { id: 1 }, { v: 2 });
  } catch (e) {
    if (!(e instanceof LeaseClosedError)) throw e;
  } finally {
    pc.release();
  }
  return MAX_TOKEN;
}
