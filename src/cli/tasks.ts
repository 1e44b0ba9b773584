import type { Command } from 'commander';
import { contextOf, pause, positiveInt } from './context.js';
import type { ApiClient } from './http.js';
import { ApiError } from './http.js';
import { print, table, progressBar, fields, type Column, type Output } from './output.js';

interface Task {
  tid: string;
  sid: string;
  name: string;
  status: string;
  progress: { total: number; done: number; failed: number };
  creator: string | null;
  owner: string | null;
  modified: string;
}

const COLUMNS: Column<Task>[] = [
  ['tid', (t) => t.tid], ['service', (t) => t.sid], ['name', (t) => t.name], ['status', (t) => t.status],
  ['done', (t) => `${t.progress.done}/${t.progress.total}`], ['failed', (t) => t.progress.failed], ['modified', (t) => t.modified],
];
const one = (t: Task) => fields(COLUMNS.map(([h, f]) => [h, f(t)]));

/** The task's path; without `--service`, its service is found by a search on its id. */
async function taskPath(api: ApiClient, tid: string, sid: string | undefined): Promise<string> {
  if (sid) return `/v1/services/${encodeURIComponent(sid)}/tasks/${encodeURIComponent(tid)}`;
  const found = await api.json<Task[]>('GET', `/v1/tasks?${new URLSearchParams({ tid, limit: '1' })}`);
  if (!found[0]) throw new ApiError(404, 'TASK_NOT_FOUND', `no task ${tid} that you may see`);
  return `/v1/services/${encodeURIComponent(found[0].sid)}/tasks/${encodeURIComponent(tid)}`;
}

/** Polls the task until it no longer processes, with a bar of items finished (done + failed) of the total. */
async function watch(api: ApiClient, out: Output, path: string, intervalMs: number, timeoutS?: number): Promise<Task> {
  const bar = progressBar(out, 'items');
  const until = timeoutS ? Date.now() + timeoutS * 1000 : Infinity;
  try {
    for (;;) {
      const t = await api.json<Task>('GET', path);
      bar.update(t.progress.done + t.progress.failed, Math.max(t.progress.total, 1), `${t.status}${t.progress.failed ? `, ${t.progress.failed} failed` : ''}`);
      if (t.status !== 'processing') return t;
      if (Date.now() > until) {
        process.exitCode = 3;
        return t;
      }
      await pause(intervalMs);
    }
  } finally {
    bar.stop();
  }
}

/** `wcr tasks list|watch|start`: tasks through `/v1`. */
export function taskCommands(program: Command): void {
  const tasks = program.command('tasks').description('tasks: list, watch, start');

  tasks.command('list')
    .description('tasks, oldest first, with their progress')
    .option('--service <sid>', 'only this service\'s tasks')
    .option('--status <status>', 'only tasks in this status (idle, processing, completed, failed, …)')
    .option('--limit <n>', 'at most this many (1..500)', positiveInt('--limit'), 100)
    .action(async (o: { service?: string; status?: string; limit: number }, cmd: Command) => {
      const { api, out } = contextOf(cmd);
      const q = new URLSearchParams({ limit: String(o.limit), ...(o.status ? { status: o.status } : {}) });
      const rows = await api.json<Task[]>('GET', `${o.service ? `/v1/services/${encodeURIComponent(o.service)}/tasks` : '/v1/tasks'}?${q}`);
      print(out, rows, () => table(rows, COLUMNS));
    });

  tasks.command('watch')
    .description('follow a task while it processes: a bar of its items done and failed')
    .argument('<tid>', 'the task id')
    .option('--service <sid>', 'its service (default: found by the id)')
    .option('--interval <ms>', 'how often to ask', positiveInt('--interval'), 500)
    .option('--timeout <seconds>', 'give up after this long (exit 3)', positiveInt('--timeout'))
    .action(async (tid: string, o: { service?: string; interval: number; timeout?: number }, cmd: Command) => {
      const { api, out } = contextOf(cmd);
      const t = await watch(api, out, await taskPath(api, tid, o.service), o.interval, o.timeout);
      print(out, t, () => one(t));
    });

  tasks.command('start')
    .description('start (or run again) a task; --watch follows it to the end')
    .argument('<tid>', 'the task id')
    .option('--service <sid>', 'its service (default: found by the id)')
    .option('--watch', 'follow it until it no longer processes')
    .option('--interval <ms>', 'how often to ask while watching', positiveInt('--interval'), 500)
    .action(async (tid: string, o: { service?: string; watch?: boolean; interval: number }, cmd: Command) => {
      const { api, out } = contextOf(cmd);
      const path = await taskPath(api, tid, o.service);
      await api.request('POST', `${path}/action`, { json: { action: 'start' } });
      const t = o.watch ? await watch(api, out, path, o.interval) : await api.json<Task>('GET', path);
      print(out, t, () => one(t));
    });
}
