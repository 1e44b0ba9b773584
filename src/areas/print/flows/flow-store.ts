import type { FlowDefinition } from './validate-flow.js';
import type { Sql } from '../../../storage/driver/database.js';

/** The flows' store: the only module that inserts, updates or deletes rows of print_flows. */

export interface FlowRow {
  name: string;
  type: 'standard' | 'custom';
  description: string | null;
  steps: { use: string; with: Record<string, unknown> }[];
  creator: string | null;
  created: Date;
  updated: Date;
}

export async function listFlows(sql: Sql): Promise<FlowRow[]> {
  return (await sql.query<FlowRow>('SELECT * FROM print_flows ORDER BY name')).rows;
}

/** The flow named `name`; with `lock`, its row locked for a change (a delete) in the caller's transaction. */
export async function getFlow(sql: Sql, name: string, lock = false): Promise<FlowRow | undefined> {
  return (await sql.query<FlowRow>(`SELECT * FROM print_flows WHERE name = $1${lock ? ' FOR UPDATE' : ''}`, [name])).rows[0];
}

export async function flowExists(sql: Sql, name: string): Promise<boolean> {
  return (await sql.query('SELECT 1 FROM print_flows WHERE name = $1', [name])).rows.length > 0;
}

/** The steps of the flow named `name` (what the engine runs in preprocessing); undefined when it is gone. */
export async function flowSteps(sql: Sql, name: string): Promise<unknown[] | undefined> {
  const { rows } = await sql.query<{ steps: unknown[] }>('SELECT steps FROM print_flows WHERE name = $1', [name]);
  return rows[0]?.steps;
}

/** Inserts; undefined when the name is taken. */
export async function insertFlow(sql: Sql, f: FlowDefinition, creator: string): Promise<FlowRow | undefined> {
  const { rows } = await sql.query<FlowRow>(
    `INSERT INTO print_flows (name, type, description, steps, creator) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO NOTHING RETURNING *`,
    [f.name, f.type, f.description, JSON.stringify(f.steps), creator]);
  return rows[0];
}

/** Who still needs a flow: printers with it as default, jobs that have not run it yet. */
export async function flowUsers(sql: Sql, name: string): Promise<{ printers: string[]; jobs: number }> {
  const { rows } = await sql.query<{ printers: string[]; jobs: string }>(
    `SELECT ARRAY(SELECT name FROM printers WHERE flow = $1 ORDER BY name) AS printers,
            (SELECT count(*) FROM print_jobs WHERE flow = $1 AND status IN ('waitpreprocessing', 'preprocessing', 'paused')) AS jobs`, [name]);
  return { printers: rows[0]!.printers, jobs: Number(rows[0]!.jobs) };
}

export async function deleteFlow(sql: Sql, name: string): Promise<void> {
  await sql.query('DELETE FROM print_flows WHERE name = $1', [name]);
}
