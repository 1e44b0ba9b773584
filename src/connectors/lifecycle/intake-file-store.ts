import type { Sql } from '../../storage/driver/database.js';
import { MicroBatcher } from '../../storage/micro-batcher.js';
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
  // the claims and finishes of the files taken at once go together: one statement (one round trip, one
  // commit) per batch; a name is in one statement at most once (`key`), each answered on its own
  const claims = new MicroBatcher<IntakeFileFacts, Row | undefined>({
    async many(fs) {
      const inserted = await write<Row>(
        `INSERT INTO intake_files (sid, source, name, size, mtime_ms, ino, sha256, state, doc_uuid, tid, holder)
         SELECT $3, u.source, u.name, u.size, u.mtime_ms, u.ino, u.sha256, 'claimed', u.doc_uuid, u.tid, $2
           FROM unnest($4::text[], $5::text[], $6::bigint[], $7::float8[], $8::text[], $9::text[], $10::text[], $11::text[])
             AS u(source, name, size, mtime_ms, ino, sha256, doc_uuid, tid), f
          WHERE f.held
         ON CONFLICT (sid, source, name) WHERE state IN ('claimed', 'stored') DO NOTHING
         RETURNING ${COLS}`,
        [sid, fs.map((f) => f.source), fs.map((f) => f.name), fs.map((f) => f.size), fs.map((f) => f.mtimeMs), fs.map((f) => f.ino),
          fs.map((f) => f.sha256), fs.map((f) => f.docUuid), fs.map((f) => f.tid)],
      );
      const byName = new Map(inserted.map((r) => [`${r.source}\n${r.name}`, r]));
      return fs.map((f) => byName.get(`${f.source}\n${f.name}`));
    },
    key: (f) => `${f.source}\n${f.name}`,
  }, 2, 64, { gatherTurn: true });
  const finishes = new MicroBatcher<{ id: string; state: 'done' | 'failed'; reason: string | null; docName: string | null; at: Date | null }, void>({
    async many(xs) {
      await write(
        `UPDATE intake_files t SET state = u.state, reason = u.reason::jsonb, finished = now(), holder = $2,
           doc_name = COALESCE(u.doc_name, t.doc_name), stored = COALESCE(u.stored, t.stored)
         FROM unnest($4::bigint[], $5::text[], $6::text[], $7::text[], $8::timestamptz[]) AS u(id, state, reason, doc_name, stored)
         WHERE t.sid = $3 AND t.id = u.id AND t.state IN ('claimed', 'stored') AND (SELECT held FROM f) RETURNING t.id`,
        [sid, xs.map((x) => x.id), xs.map((x) => x.state), xs.map((x) => x.reason), xs.map((x) => x.docName), xs.map((x) => x.at)],
      );
      return xs.map(() => undefined);
    },
  }, 2, 64, { gatherTurn: true });
  return {
    async claim(f: IntakeFileFacts) {
      const made = await claims.run(f);
      if (made) return { claim: claimOf({ ...made, claimed: new Date(made.claimed) }), fresh: true };
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
      await finishes.run({ id, state, reason: reason === undefined ? null : JSON.stringify(reason), docName: stored?.docName ?? null, at: stored?.at ?? null });
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
