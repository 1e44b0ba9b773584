import type { Services } from '../runtime/services.js';
import { pendingCommands } from '../domain/commands/command-store.js';
import { pendingPreviews } from '../domain/repository/entry-store.js';

const BATCH = 1000;

/**
 * Redis holds queues only; PostgreSQL is the truth. The reconciler enqueues
 * every piece of work the database says is pending: commands not final, and
 * documents whose preview is missing for their current content. Job ids derive
 * from entity and transition, so enqueueing work that is still queued is a no-op.
 */
export async function reconcile(s: Pick<Services, 'db' | 'queue' | 'log'>): Promise<{ commands: number; previews: number }> {
  const cmds = await pendingCommands(s.db, BATCH);
  for (const c of cmds) await s.queue.enqueue('command.run', c);
  const previews = await pendingPreviews(s.db, BATCH);
  for (const p of previews) await s.queue.enqueue('preview.render', p);
  if (cmds.length + previews.length > 0) s.log.info({ commands: cmds.length, previews: previews.length }, 'reconciled pending work into the queues');
  return { commands: cmds.length, previews: previews.length };
}
