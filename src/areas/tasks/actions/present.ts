import type { ItemReport } from '../../../connectors/facets/tasks.js';
import type { ItemRow } from '../store/item-queries.js';

/** One `cstats` entry (DESIGN.md section 6). */
export interface CstatsEntry {
  state: string;
  item: string;
  href: string | null;
  updated: string;
  message: string | null;
}

/** `cstats`: `{ "<jobId>": { state, item, href, updated, message } }`, from the item rows. */
export function presentCstats(rows: readonly ItemRow[]): Record<string, CstatsEntry> {
  return Object.fromEntries(rows.filter((r) => r.job_id !== null).map((r) => [r.job_id!, {
    state: r.state ?? r.outcome, item: r.item, href: r.href, updated: r.updated.toISOString(), message: r.message,
  }]));
}

/** A row as the connector's hooks see it (the last report). */
export function reportOf(r: ItemRow): ItemReport {
  return {
    jobId: r.job_id!, item: r.item, state: r.state ?? r.outcome,
    outcome: r.outcome === 'queued' ? 'running' : r.outcome,
    ...(r.href ? { href: r.href } : {}), ...(r.message ? { message: r.message } : {}),
  };
}
