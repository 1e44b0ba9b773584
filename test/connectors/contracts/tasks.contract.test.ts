import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ItemEffect, ItemReport, TaskItem, TasksFacet } from '../../../src/connectors/connector.js';
import { stateStore } from '../../../src/connectors/lifecycle/state-store.js';
import { ItemInterrupted, TASK_ACTIONS, applyEffect, type Interruption } from '../../../src/connectors/facets/tasks.js';
import { exampleInstances, openContractEnv } from './instances.js';

/**
 * The contract of the `tasks` facet, run against every registered connector
 * type's examples that have one: the actions offered are the API's and
 * include start; an item's reports name it, keep one job id across re-runs
 * and end in a final outcome; an interrupted item settles within seconds and
 * never reports `done` afterwards.
 */
const { instances, cleanup } = await exampleInstances('tasks');
let env: Awaited<ReturnType<typeof openContractEnv>>;
beforeAll(async () => {
  env = await openContractEnv();
});
afterAll(async () => {
  await env?.close();
  await cleanup();
});

const item = (sid: string, tid: string = randomUUID()): TaskItem => ({
  sid, tid, id: randomUUID(), index: 0, href: `/v1/services/${sid}/repo/${randomUUID()}`, metadata: { name: 'contract.pdf' },
});

/**
 * Runs one item, collecting its reports as the tasks area would store them;
 * an effect handed with a report runs in a transaction of its own, as the
 * area runs it with the report. `accept: false` refuses every report (the
 * item was paused, aborted or finished elsewhere meanwhile).
 */
async function run(tasks: TasksFacet, it: TaskItem, signal = new AbortController().signal, accept = true) {
  const reports: ItemReport[] = [];
  const effects: ItemReport[] = [];
  const ports = env.ports(it.sid);
  const report = async (r: Omit<ItemReport, 'item'>, effect?: ItemEffect) => {
    reports.push({ ...r, item: it.id });
    if (effect && accept) {
      effects.push({ ...r, item: it.id });
      await env.db.transaction((tx) => applyEffect(effect, stateStore(tx, it.sid)));
    }
    return accept;
  };
  const outcome = await tasks.runItem(it, { ...ports, signal, report }).then(() => 'resolved' as const, (err: unknown) => err);
  return { reports, effects, outcome };
}

it('the mock tasks take part', () => {
  expect(instances.map((i) => i.connector.type)).toContain('mock');
});

for (const { label, connector } of instances) {
  describe(`tasks facet: ${label}`, () => {
    const tasks = connector.tasks!;
    const sid = connector.sid;

    it('offers API actions only, start among them, each once', () => {
      expect(tasks.actions).toContain('start');
      expect(tasks.actions.every((a) => (TASK_ACTIONS as readonly string[]).includes(a))).toBe(true);
      expect(new Set(tasks.actions).size).toBe(tasks.actions.length);
    });

    it('an item reports under one job id and ends in a final outcome; a re-run keeps the job id', async () => {
      const one = item(sid);
      const first = await run(tasks, one);
      expect(first.outcome).toBe('resolved');
      expect(first.reports.length).toBeGreaterThan(0);
      const jobIds = new Set(first.reports.map((r) => r.jobId));
      expect(jobIds.size).toBe(1);
      for (const r of first.reports) expect(r.state.length).toBeGreaterThan(0);
      // resolved: either finished, or handed off (still running somewhere else)
      expect(['done', 'failed', 'running']).toContain(first.reports.at(-1)!.outcome);
      const again = await run(tasks, one);
      expect(new Set(again.reports.map((r) => r.jobId))).toEqual(jobIds);
      // another item of the same task gets another job id
      const other = await run(tasks, item(sid, one.tid));
      expect(other.reports[0]!.jobId).not.toBe(first.reports[0]!.jobId);
    });

    it('hands side effects only with a final report, at most one per run', async () => {
      const { reports, effects } = await run(tasks, item(sid));
      expect(effects.length).toBeLessThanOrEqual(1);
      for (const e of effects) expect(['done', 'failed']).toContain(e.outcome);
      if (effects.length === 1) expect(reports.at(-1)).toEqual(effects[0]);
    });

    it('settles when its reports are refused, and claims nothing after a refusal', async () => {
      const { reports, outcome } = await run(tasks, item(sid), new AbortController().signal, false);
      expect(outcome === 'resolved' || outcome instanceof Error).toBe(true);
      // a refused report is the end of the item's story here: at most the one that was refused follows no other final one
      expect(reports.filter((r) => r.outcome === 'done' || r.outcome === 'failed').length).toBeLessThanOrEqual(1);
    });

    for (const by of ['pause', 'abort', 'shutdown'] as Interruption[]) {
      it(`an item interrupted by ${by} settles within seconds and never reports done afterwards`, async () => {
        const ctl = new AbortController();
        const running = run(tasks, item(sid), ctl.signal);
        await new Promise((r) => setTimeout(r, 20));
        const t0 = Date.now();
        ctl.abort(new ItemInterrupted(by));
        const { reports, outcome } = await running;
        expect(Date.now() - t0).toBeLessThan(5000);
        if (outcome !== 'resolved') expect(outcome).toBeInstanceOf(ItemInterrupted);
        const last = reports.at(-1);
        // it either finished before the interruption arrived, or did not claim success after it
        if (outcome !== 'resolved') expect(last?.outcome).not.toBe('done');
        if (by === 'abort' && outcome !== 'resolved' && last) expect(['aborted', 'running']).toContain(last.outcome);
      });
    }
  });
}
