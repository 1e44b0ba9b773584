import type { Principal } from '../../../auth/principal.js';
import { SHARED } from '../../../auth/policy.js';
import { AppError } from '../../../errors/app-error.js';
import { validateFlow } from './validate-flow.js';
import type { Services } from '../../../runtime/services.js';
import { deleteFlow, flowUsers, getFlow, insertFlow, listFlows, type FlowRow } from './flow-store.js';

const notFound = (name: string) => new AppError('FLOW_NOT_FOUND', `no flow named "${name.slice(0, 200)}"`, { flow: name.slice(0, 200) });

/**
 * Flows (DESIGN.md section 7): declarative pipelines of the fixed step
 * catalogue, checked by the engine's `validateFlow` (400 INVALID_FLOW naming
 * the step and the problem). Reading needs `read` on flows, changes `write`
 * and `delete` (admin by default).
 */
export class FlowService {
  constructor(private readonly s: Pick<Services, 'db' | 'policy'>) {}

  list(p: Principal): Promise<FlowRow[]> {
    this.s.policy.require(p, 'flows', 'read', SHARED);
    return listFlows(this.s.db);
  }

  async get(p: Principal, name: string): Promise<FlowRow> {
    this.s.policy.require(p, 'flows', 'read', SHARED);
    const row = await getFlow(this.s.db, name);
    if (!row) throw notFound(name);
    return row;
  }

  async create(p: Principal, def: unknown): Promise<FlowRow> {
    this.s.policy.require(p, 'flows', 'write', SHARED);
    const flow = validateFlow(def);
    const row = await insertFlow(this.s.db, flow, p.user);
    if (!row) throw new AppError('FLOW_EXISTS', `a flow named "${flow.name}" exists; delete it first`, { flow: flow.name });
    return row;
  }

  /** 409 FLOW_IN_USE while a printer has it as its flow or jobs wait to run it. */
  async remove(p: Principal, name: string): Promise<FlowRow> {
    this.s.policy.require(p, 'flows', 'delete', SHARED);
    return this.s.db.transaction(async (tx) => {
      const row = await getFlow(tx, name, true);
      if (!row) throw notFound(name);
      const users = await flowUsers(tx, name);
      if (users.printers.length > 0 || users.jobs > 0) {
        throw new AppError('FLOW_IN_USE', users.printers.length > 0 ? `printers use flow "${name}": ${users.printers.join(', ')}` : `${users.jobs} job(s) still have to run flow "${name}"`, users);
      }
      await deleteFlow(tx, name);
      return row;
    });
  }
}
