import type { CommandRow } from './command-store.js';

/** The command status body (DESIGN.md section 6, repository commands). */
export interface CommandStatus {
  cid: string;
  command: string;
  state: string;
  progress: { done: number; total: number | null };
  result: Record<string, unknown> | null;
  error: { code: string; message: string } | null;
  created: string;
  updated: string;
  expires: string;
}

export function presentCommand(c: CommandRow): CommandStatus {
  return {
    cid: c.cid, command: c.command, state: c.state,
    progress: { done: c.progress_done, total: c.progress_total },
    result: c.result, error: c.error,
    created: c.created.toISOString(), updated: c.updated.toISOString(), expires: c.expires.toISOString(),
  };
}

