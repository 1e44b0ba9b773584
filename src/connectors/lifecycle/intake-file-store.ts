import type { Sql } from '../../storage/driver/database.js';
import type { IntakeClaim, IntakeClaimsPort, IntakeFileFacts } from '../ports.js';
import { fencedOut, fenceHolds, fenceParams, type Fence } from './fence.js';

interface Row {
  id: string;
  source: string;
  name: string;
  size: string;
  mtime_ms: number | null;
  ino: string | null;
  sha256: string;
  state: IntakeClaim['state'];
  doc_uuid: string | null;
  doc_name: string | null;
  tid: string | null;
  claimed: Date;
}

const COLS = 'id::text, source, name, size::text, mtime_ms, ino, sha256, state, doc_uuid, doc_name, tid, claimed';

const claimOf = (r: Row): IntakeClaim => ({
  id: r.id, source: r.source, name: r.name, size: Number(r.size), mtimeMs: r.mtime_ms, ino: r.ino, sha256: r.sha256,
  state: r.state, docUuid: r.doc_uuid, docName: r.doc_name, tid: r.tid, claimed: r.claimed,
});

/**
 * The SQL of `intake_files`, scoped to one service: the durable claims of
 * the intake connectors. Every write of a single-instance service is fenced
 * by its lease (`fence.ts`): after a takeover the old holder's writes fail
 * with `LeaseLostError` instead of landing.
 */
export function intakeFileStore(db: Sql, sid: string, fence?: Fence): IntakeClaimsPort {
  const [lease, holder] = fenceParams(fence);
  /** Runs a fenced data-modifying statement `cte` (its parameters from $3; the fence is $1, $2); its RETURNING rows. */
  const write = async <R>(cte: string, params: unknown[]): Promise<R[]> => {
    const { rows } = await db.query<{ held: boolean; rows: R[] | null }>(
      `WITH f AS (SELECT ${fenceHolds('$1', '$2')} AS held), w AS (${cte})
       SELECT (SELECT held FROM f) AS held, (SELECT json_agg(w) FROM w) AS rows`,
      [lease, holder, ...params],
    );
    if (!rows[0]!.held) throw fencedOut(fence);
    return rows[0]!.rows ?? [];
  };
  const one = async (cte: string, params: unknown[]): Promise<boolean> => (await write(cte, params)).length === 1;
  return {
    async claim(f: IntakeFileFacts) {
      const inserted = await write<Row>(
        `INSERT INTO intake_files (sid, source, name, size, mtime_ms, ino, sha256, state, doc_uuid, tid, holder)
         SELECT $3, $4, $5, $6, $7, $8, $9, 'claimed', $10, $11, $2 FROM f WHERE f.held
         ON CONFLICT (sid, source, name) WHERE state IN ('claimed', 'stored') DO NOTHING
         RETURNING ${COLS}`,
        [sid, f.source, f.name, f.size, f.mtimeMs, f.ino, f.sha256, f.docUuid, f.tid],
      );
      if (inserted[0]) return { claim: claimOf({ ...inserted[0], claimed: new Date(inserted[0].claimed) }), fresh: true };
      const { rows } = await db.query<Row>(
        `SELECT ${COLS} FROM intake_files WHERE sid = $1 AND source = $2 AND name = $3 AND state IN ('claimed', 'stored')`,
        [sid, f.source, f.name],
      );
      if (!rows[0]) return this.claim(f); // finished meanwhile (a race with nobody under a lease; stays correct anyway)
      return { claim: claimOf(rows[0]), fresh: false };
    },

    async unfinished(source) {
      const { rows } = await db.query<Row>(
        `SELECT ${COLS} FROM intake_files WHERE sid = $1 AND source = $2 AND state IN ('claimed', 'stored') ORDER BY id`,
        [sid, source],
      );
      return rows.map(claimOf);
    },

    async markStored(id, docName) {
      if (!(await one(
        `UPDATE intake_files SET state = 'stored', doc_name = $5, stored = now(), holder = $2
         WHERE sid = $3 AND id = $4::bigint AND state IN ('claimed', 'stored') AND (SELECT held FROM f) RETURNING id`,
        [sid, id, docName],
      ))) throw new Error(`intake claim ${id} is not open`);
    },

    async finish(id, state, reason, stored) {
      await write(
        `UPDATE intake_files SET state = $5, reason = $6::jsonb, finished = now(), holder = $2,
           doc_name = COALESCE($7, doc_name), stored = COALESCE($8::timestamptz, stored)
         WHERE sid = $3 AND id = $4::bigint AND state IN ('claimed', 'stored') AND (SELECT held FROM f) RETURNING id`,
        [sid, id, state, reason === undefined ? null : JSON.stringify(reason), stored?.docName ?? null, stored?.at ?? null],
      );
    },

    async release(id) {
      await write(
        `DELETE FROM intake_files WHERE sid = $3 AND id = $4::bigint AND state IN ('claimed', 'stored') AND (SELECT held FROM f) RETURNING id`,
        [sid, id],
      );
    },

    async taken(source, name, sha256) {
      const { rows } = await db.query(
        `SELECT 1 FROM intake_files WHERE sid = $1 AND source = $2 AND name = $3 AND sha256 = $4 AND state = 'done' LIMIT 1`,
        [sid, source, name, sha256],
      );
      return rows.length > 0;
    },

    async prune(olderThanDays, limit = 10_000) {
      const removed = await write(
        `DELETE FROM intake_files WHERE id IN (
           SELECT id FROM intake_files WHERE sid = $3 AND finished < now() - $4::float8 * interval '1 day' LIMIT $5)
         AND (SELECT held FROM f) RETURNING id`,
        [sid, olderThanDays, limit],
      );
      return removed.length;
    },
  };
}
