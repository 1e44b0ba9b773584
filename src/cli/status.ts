import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { contextOf } from './context.js';
import { print, table, fields } from './output.js';

/** This package's version: the nearest package.json above this file (src/cli or dist/src/cli). */
function cliVersion(): string {
  for (const up of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(up, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'workflow-connector-runtime' && pkg.version) return pkg.version;
    } catch {
      // not there: the next one up
    }
  }
  return 'unknown';
}

/** `queue_jobs{queue="…",state="…"} n` lines of the Prometheus text: jobs per queue and state. */
export function queueDepths(metrics: string): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const m of metrics.matchAll(/^queue_jobs\{([^}]*)\}\s+(\S+)$/gm)) {
    const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1]!, l[2]!]));
    if (!labels.queue || !labels.state) continue;
    (out[labels.queue] ??= {})[labels.state] = Number(m[2]);
  }
  return out;
}

/** `wcr status`: readiness, queues and versions of the server. */
export function statusCommand(program: Command): void {
  program.command('status')
    .description('the server\'s readiness (database, Redis), its queues (jobs per state) and versions')
    .action(async (_o: unknown, cmd: Command) => {
      const { api, out } = contextOf(cmd);
      const ready = await api.request('GET', '/readyz', { open: true }).then((r) => r.json(), (err: { status?: number; message: string }) => ({ status: 'not ready', error: err.message })) as { status: string; checks?: Record<string, unknown> };
      const root = await api.json<{ version: string; api: string }>('GET', '/', { open: true });
      const workflow = await api.json<{ info: { version: string } }>('GET', '/openapi/workflow-api.json', { open: true });
      const queues = queueDepths(await (await api.request('GET', '/metrics', { open: true })).text());
      const value = {
        url: api.baseUrl,
        ready: ready.status === 'ready',
        checks: ready.checks ?? {},
        queues,
        versions: { cli: cliVersion(), workflowApi: workflow.info.version, printApi: root.version },
      };
      const states = [...new Set(Object.values(queues).flatMap((s) => Object.keys(s)))].sort();
      print(out, value, () => [
        fields([['server', value.url], ['ready', `${value.ready ? 'yes' : 'no'} ${JSON.stringify(value.checks)}`],
          ['versions', `wcr ${value.versions.cli}, Document Workflow API ${value.versions.workflowApi}, Print Job Management API ${value.versions.printApi}`]]),
        '',
        table(Object.entries(queues), [['queue', ([q]) => q], ...states.map((s): [string, (r: [string, Record<string, number>]) => unknown] => [s, ([, c]) => c[s] ?? 0])]),
      ].join('\n'));
      if (!value.ready) process.exitCode = 1;
    });
}
