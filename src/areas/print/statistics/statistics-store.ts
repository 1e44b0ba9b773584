import type { Sql } from '../../../storage/driver/database.js';

export interface JobScope {
  from: string;
  to: string;
  printer?: string;
}

const scopeWhere = (s: JobScope, params: unknown[]) => {
  params.push(s.from, s.to);
  const where = [`created >= $${params.length - 1}::timestamptz`, `created < $${params.length}::timestamptz`];
  if (s.printer !== undefined) {
    params.push(s.printer);
    where.push(`printer = $${params.length}`);
  }
  return where.join(' AND ');
};

/** Jobs created in the period, in total and by state. */
export async function jobCount(sql: Sql, s: JobScope): Promise<{ total: number; byStatus: Record<string, number> }> {
  const params: unknown[] = [];
  const { rows } = await sql.query<{ status: string; n: string }>(
    `SELECT status, count(*) AS n FROM print_jobs WHERE ${scopeWhere(s, params)} GROUP BY status`, params);
  const byStatus = Object.create(null) as Record<string, number>;
  let total = 0;
  for (const r of rows) {
    byStatus[r.status] = Number(r.n);
    total += Number(r.n);
  }
  return { total, byStatus };
}

/** Jobs created per hour or day, every bucket of the period present (zero when empty). */
export async function jobSeries(sql: Sql, s: JobScope, interval: 'hour' | 'day'): Promise<{ time: Date; count: number; pages: number }[]> {
  const params: unknown[] = [];
  const where = scopeWhere(s, params);
  params.push(interval);
  const unit = `$${params.length}::text`;
  const { rows } = await sql.query<{ time: Date; count: string; pages: string }>(
    `WITH buckets AS (
       SELECT generate_series(date_trunc(${unit}, $1::timestamptz), $2::timestamptz - interval '1 microsecond', ('1 ' || ${unit})::interval) AS time),
     counts AS (
       SELECT date_trunc(${unit}, created) AS time, count(*) AS count, COALESCE(sum(pages * copies), 0) AS pages
       FROM print_jobs WHERE ${where} GROUP BY 1)
     SELECT b.time, COALESCE(c.count, 0) AS count, COALESCE(c.pages, 0) AS pages FROM buckets b LEFT JOIN counts c ON c.time = b.time ORDER BY b.time`,
    params);
  return rows.map((r) => ({ time: r.time, count: Number(r.count), pages: Number(r.pages) }));
}

/** Printers by runtime status (the same derivation as `runtimeStatus`). */
export async function printerCount(sql: Sql): Promise<{ total: number; byStatus: Record<string, number> }> {
  const { rows } = await sql.query<{ status: string; n: string }>(
    `SELECT CASE WHEN NOT p.enabled THEN 'disabled' WHEN p.paused THEN 'paused'
                 WHEN EXISTS (SELECT 1 FROM print_jobs j WHERE j.printer = p.name AND j.status = 'processing') THEN 'printing'
                 WHEN p.error IS NOT NULL THEN 'error' ELSE 'idle' END AS status, count(*) AS n
     FROM printers p GROUP BY 1`);
  const byStatus = Object.assign(Object.create(null) as Record<string, number>, { idle: 0, printing: 0, paused: 0, error: 0, disabled: 0 });
  let total = 0;
  for (const r of rows) {
    byStatus[r.status] = Number(r.n);
    total += Number(r.n);
  }
  return { total, byStatus };
}
