import type { Sql } from '../../../../storage/driver/database.js';
import { sqlFile } from '../../../../storage/sql-file.js';
import { CHAIN_END, redirectChain } from '../../printers/printer-store.js';

/**
 * A submission's reads before its job is inserted: the printer, the end of
 * its redirect chain and the flow. Read-only; the insert (job-store.ts)
 * checks the chain's end again under a share lock on the printer.
 */

const SUBMIT_TARGET = sqlFile(new URL('./statements/submit-target.sql', import.meta.url), {
  redirect_chain: redirectChain('(SELECT name, redirect FROM printers WHERE name = $1)'),
  chain_end: CHAIN_END,
});
const SUBMIT_TARGETS = sqlFile(new URL('./statements/submit-targets.sql', import.meta.url));

/** What a submission needs to know before it reads the document: the printer's flow, where its redirect chain ends, whether the flow exists. */
export interface SubmitTarget {
  /** The end of the printer's redirect chain. */
  target: string;
  /** The flow the job runs (`flow` given, else the printer's). */
  flow: string | null;
  flowExists: boolean;
}

/** The printer named `printer` as a submission sees it, in one statement; undefined when there is none. `flow` undefined: the printer's. */
export async function submitTarget(sql: Sql, printer: string, flow: string | null | undefined): Promise<SubmitTarget | undefined> {
  const { rows } = await sql.query<{ target: string; flow: string | null; flow_exists: boolean }>(SUBMIT_TARGET, [printer, flow === undefined, flow ?? null]);
  const row = rows[0];
  return row && { target: row.target, flow: row.flow, flowExists: row.flow_exists };
}

/** `submitTarget` for several submissions in one statement; answers in their order (undefined: no such printer). */
export async function submitTargets(sql: Sql, asked: readonly { printer: string; flow: string | null | undefined }[]): Promise<(SubmitTarget | undefined)[]> {
  const { rows } = await sql.query<{ k: string | number; target: string; flow: string | null; flow_exists: boolean }>(
    SUBMIT_TARGETS, [asked.map((a) => a.printer), asked.map((a) => a.flow === undefined), asked.map((a) => a.flow ?? null)]);
  const out: (SubmitTarget | undefined)[] = asked.map(() => undefined);
  for (const r of rows) out[Number(r.k) - 1] = { target: r.target, flow: r.flow, flowExists: r.flow_exists };
  return out;
}
