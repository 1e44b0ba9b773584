import { randomUUID } from 'node:crypto';
import type { Sql } from '../storage/driver/database.js';

/**
 * The one writer of `deployment` (migration 025): the database's deployment
 * id, made by the first start. Starts racing on a fresh database agree on the
 * row inserted first: a statement whose insert met another start's row may
 * not see it yet (its snapshot is older), so it reads again.
 */
export async function deploymentId(sql: Sql): Promise<string> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const { rows } = await sql.query<{ id: string }>(
      `WITH made AS (INSERT INTO deployment (id) VALUES ($1) ON CONFLICT (one) DO NOTHING RETURNING id)
       SELECT id FROM made UNION ALL SELECT id FROM deployment LIMIT 1`,
      [randomUUID()],
    );
    if (rows[0]) return rows[0].id;
  }
  throw new Error('cannot read the deployment id');
}
