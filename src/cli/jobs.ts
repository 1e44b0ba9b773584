import type { Command } from 'commander';
import { contextOf, pause, positiveInt } from './context.js';
import { print, table, progressBar, fields, type Column } from './output.js';

interface Job {
  id: number;
  status: string;
  printer: string;
  user: string | null;
  name: string | null;
  fileName: string | null;
  pages: number | null;
  copies: number;
  message: string | null;
  created: string;
  finished: string | null;
}

/** A job's final states: watching ends there. */
const FINAL = new Set(['processed', 'canceled', 'error']);
const COLUMNS: Column<Job>[] = [
  ['id', (j) => j.id], ['status', (j) => j.status], ['printer', (j) => j.printer], ['user', (j) => j.user],
  ['name', (j) => j.name ?? j.fileName], ['pages', (j) => j.pages], ['created', (j) => j.created], ['message', (j) => j.message],
];
const quote = (v: string) => `'${v.replaceAll("'", "''")}'`;

/** `wcr jobs list|watch|cancel|repeat`: print jobs through `/v3/jobs/` (lpstat, lprm). */
export function jobCommands(program: Command): void {
  const jobs = program.command('jobs').description('print jobs: list, watch, cancel, repeat');

  jobs.command('list')
    .description('print jobs, newest first')
    .option('--printer <name>', 'only this printer\'s jobs')
    .option('--status <status>', 'only jobs in this status (waitprocessing, processing, processed, error, …)')
    .option('--top <n>', 'at most this many', positiveInt('--top'), 50)
    .action(async (o: { printer?: string; status?: string; top: number }, cmd: Command) => {
      const { api, out } = contextOf(cmd);
      const filter = [o.printer && `printer eq ${quote(o.printer)}`, o.status && `status eq ${quote(o.status)}`].filter(Boolean).join(' and ');
      const q = new URLSearchParams({ $top: String(o.top), ...(filter ? { $filter: filter } : {}) });
      const rows = await api.json<Job[]>('GET', `/v3/jobs/?${q}`);
      print(out, rows, () => table(rows, COLUMNS));
    });

  jobs.command('watch')
    .description('follow a job until it is processed, canceled or in error')
    .argument('<id>', 'the job id', positiveInt('id'))
    .option('--interval <ms>', 'how often to ask', positiveInt('--interval'), 500)
    .option('--timeout <seconds>', 'give up after this long (exit 3)', positiveInt('--timeout'))
    .action(async (id: number, o: { interval: number; timeout?: number }, cmd: Command) => {
      const { api, out } = contextOf(cmd);
      const bar = progressBar(out, `job ${id}`);
      const until = o.timeout ? Date.now() + o.timeout * 1000 : Infinity;
      let job = await api.json<Job>('GET', `/v3/jobs/${id}`);
      try {
        while (!FINAL.has(job.status)) {
          bar.update(0, 1, job.status);
          if (Date.now() > until) {
            process.exitCode = 3;
            break;
          }
          await pause(o.interval);
          job = await api.json<Job>('GET', `/v3/jobs/${id}`);
        }
        if (FINAL.has(job.status)) bar.update(1, 1, job.status);
      } finally {
        bar.stop();
      }
      print(out, job, () => fields(COLUMNS.map(([h, f]) => [h, f(job)])));
    });

  for (const [name, what] of [['cancel', 'cancel a job that is not final'], ['repeat', 'print a job again (a new attempt)']] as const) {
    jobs.command(name)
      .description(what)
      .argument('<id>', 'the job id', positiveInt('id'))
      .action(async (id: number, _o: unknown, cmd: Command) => {
        const { api, out } = contextOf(cmd);
        const job = await api.json<Job>('PUT', `/v3/jobs/${id}/${name}`);
        print(out, job, () => fields(COLUMNS.map(([h, f]) => [h, f(job)])));
      });
  }
}
