import { z } from 'zod';
import { DEFAULT_LEASE_TTL_MS, type Connector, type ConnectorType } from '../connector.js';
import { TASK_ACTIONS } from '../facets/tasks.js';
import { heartbeatIntake } from './mock-intake.js';
import { mockTasks } from './mock-tasks.js';
import { mockFunctions } from './mock-functions.js';

const optionsSchema = z.strictObject({
  /** Intake: a heartbeat naming the running process, written to the service's state. */
  heartbeat: z.strictObject({ intervalMs: z.int().min(50).max(3_600_000).default(1000) }).optional(),
  /** Run the intake in one worker process at a time (a lease in PostgreSQL). */
  singleInstance: z.boolean().default(false),
  /** Lease length for `singleInstance`: a dead holder is replaced within about this long. */
  leaseTtlMs: z.int().min(1000).max(300_000).default(DEFAULT_LEASE_TTL_MS),
  /** Tasks: each item takes `itemMs` and fails at `failRate` (both overridable per item: `mock.delayMs`, `mock.failRate`, `mock.fail`); `actions` offered (default all). */
  tasks: z.strictObject({
    itemMs: z.int().min(0).max(3_600_000).default(1000),
    failRate: z.number().min(0).max(1).default(0),
    actions: z.array(z.enum(TASK_ACTIONS)).min(1).refine((a) => a.includes('start'), 'must include "start"').default([...TASK_ACTIONS]),
  }).optional(),
  /** Functions: `echo` and `add`. */
  functions: z.boolean().default(false),
});

/**
 * A simulated service for demos and tests. Without options it has no facets
 * (the repository routes answer 404 for it); options switch on a simulated
 * intake (heartbeat), tasks and functions, and single-instance running.
 */
export const mockConnectorType: ConnectorType = {
  type: 'mock',
  description: 'Simulated connector for demos and tests (heartbeat intake, simulated tasks, demo functions)',
  examples: [{}, { heartbeat: { intervalMs: 100 }, singleInstance: true, tasks: { itemMs: 50 }, functions: true }, { tasks: { itemMs: 0, failRate: 0.5, actions: ['start', 'abort'] } }],
  create(ctx): Connector {
    const o = optionsSchema.parse(ctx.config.options);
    return {
      sid: ctx.sid,
      type: 'mock',
      ...(o.heartbeat ? { intake: heartbeatIntake(o.heartbeat.intervalMs) } : {}),
      ...(o.tasks ? { tasks: mockTasks(o.tasks) } : {}),
      ...(o.functions ? { functions: mockFunctions() } : {}),
      ...(o.singleInstance ? { singleInstance: { leaseTtlMs: o.leaseTtlMs } } : {}),
    };
  },
};
