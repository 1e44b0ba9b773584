import type { Sql } from '../../storage/driver/database.js';

/**
 * The SQL of `connector_leases`. Every comparison uses the database's clock,
 * so worker hosts with drifting clocks still agree on who holds a lease.
 */
export const leaseStore = {
  /** Takes the lease when it is free, expired or already ours; true when we hold it now. */
  async acquire(db: Sql, name: string, holder: string, ttlMs: number): Promise<boolean> {
    const { rows } = await db.query(
      `INSERT INTO connector_leases (name, holder, expires) VALUES ($1, $2, now() + $3::float8 * interval '1 millisecond')
       ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, acquired = now(), renewed = now(), expires = EXCLUDED.expires
       WHERE connector_leases.expires < now() OR connector_leases.holder = EXCLUDED.holder
       RETURNING holder`,
      [name, holder, ttlMs],
    );
    return rows.length === 1;
  },

  /** Extends our lease; false when it is no longer ours (expired and taken). */
  async renew(db: Sql, name: string, holder: string, ttlMs: number): Promise<boolean> {
    const { rowCount } = await db.query(
      `UPDATE connector_leases SET renewed = now(), expires = now() + $3::float8 * interval '1 millisecond'
       WHERE name = $1 AND holder = $2`,
      [name, holder, ttlMs],
    );
    return rowCount === 1;
  },

  /** Gives the lease up so another process takes over at once. */
  async release(db: Sql, name: string, holder: string): Promise<void> {
    await db.query('DELETE FROM connector_leases WHERE name = $1 AND holder = $2', [name, holder]);
  },
};
