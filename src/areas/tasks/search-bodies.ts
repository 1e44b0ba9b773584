import type { TaskEmbed } from './schema.js';
import { presentTask } from './present.js';
import type { TaskLists } from './task-lists.js';
import type { TaskService } from './task-service.js';

/**
 * Tasks a search reads per group of statements: their rows, then their
 * embedded lists. With `cstats` fewer, since a task's `cstats` holds an entry
 * per reported item (up to `tasks.maxItems`).
 */
const GROUP = 25;
const GROUP_WITH_CSTATS = 4;

/**
 * The bodies of a search's page, a group of tasks at a time: the rows of the
 * next group are read only when the answer has taken the previous one (the
 * caller streams them), and each embedded list holds at most `embedItems`
 * items. A task deleted after the page was found is left out.
 */
export async function* searchBodies(
  tasks: TaskService, taskLists: TaskLists, tids: readonly string[], embed: ReadonlySet<TaskEmbed>, embedItems: number,
): AsyncGenerator<Record<string, unknown>> {
  const cstats = embed.has('cstats');
  const want = { input: embed.has('input'), inputItems: embed.has('inputlist'), output: embed.has('output') };
  const lists = want.input || want.inputItems || want.output;
  const group = cstats ? GROUP_WITH_CSTATS : GROUP;
  for (let i = 0; i < tids.length; i += group) {
    const rows = await tasks.rows(tids.slice(i, i + group), { cstats });
    const parts = lists ? await taskLists.embedsForSearch(rows, want, embedItems) : undefined;
    for (const t of rows) yield presentTask(t, { embed, full: false, capped: true, ...parts?.get(t.tid) });
  }
}
