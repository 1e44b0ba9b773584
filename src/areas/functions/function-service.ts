import type { Principal } from '../../auth/principal.js';
import type { Permissions } from '../../auth/permissions.js';
import type { Policy } from '../../auth/policy.js';
import type { Connector, FunctionDescriptor, FunctionsFacet } from '../../connectors/connector.js';
import { callFunction, FID_PATTERN } from '../../connectors/facets/functions.js';
import { intakeFileStore } from '../../connectors/lifecycle/intake-file-store.js';
import { stateStore } from '../../connectors/lifecycle/state-store.js';
import { outboxPort } from '../../connectors/ports.js';
import type { ConnectorRegistry } from '../../connectors/registry.js';
import { AppError } from '../../errors/app-error.js';
import type { Logger } from '../../logging/logger.js';
import type { Outbox } from '../../outbox/outbox.js';
import type { Database } from '../../storage/driver/database.js';

export interface FunctionServiceOptions {
  db: Database;
  registry: ConnectorRegistry;
  permissions: Permissions;
  policy: Policy;
  outbox: Outbox;
  log: Logger;
}

/**
 * A service's functions (spec: Functions; DESIGN.md "Functions"): the
 * declared list, and synchronous calls with parameters checked against the
 * declaration (`callFunction`). 404 for a missing service, a service without
 * functions, or an unknown function; 403 without a known role, or without the
 * right a function declares (`requires`). Never sees HTTP.
 */
export class FunctionService {
  constructor(private readonly o: FunctionServiceOptions) {}

  /** The service's functions facet: 404 SERVICE_NOT_FOUND, NO_FUNCTIONS. */
  private facet(p: Principal, sid: string): { connector: Connector; functions: FunctionsFacet } {
    this.o.permissions.requireAnyRole(p);
    const connector = this.o.registry.get(sid);
    if (!connector.functions) throw new AppError('NO_FUNCTIONS', `service "${sid}" offers no functions`, { sid });
    return { connector, functions: connector.functions };
  }

  /** GET /services/{sid}/function: every declared function, with its parameters. */
  list(p: Principal, sid: string): readonly FunctionDescriptor[] {
    return this.facet(p, sid).functions.list;
  }

  /** POST /services/{sid}/function/{fid}: `raw` (null-prototype: query pairs or a JSON object) checked, then the call. */
  async call(p: Principal, sid: string, fid: string, raw: Readonly<Record<string, unknown>>, signal: AbortSignal): Promise<unknown> {
    const { connector, functions } = this.facet(p, sid);
    const d = FID_PATTERN.test(fid) ? functions.list.find((f) => f.fid === fid) : undefined;
    if (!d) throw new AppError('FUNCTION_NOT_FOUND', `service "${sid}" has no function "${fid.slice(0, 64)}"`, { sid, fid: fid.slice(0, 64) });
    if (d.requires) this.o.policy.require(p, d.requires.area, d.requires.action);
    return callFunction(functions, fid, raw, {
      principal: p, signal, log: this.o.log.child({ sid: connector.sid, fid }),
      outbox: outboxPort(this.o.outbox, this.o.db), state: stateStore(this.o.db, connector.sid), claims: intakeFileStore(this.o.db, connector.sid),
    });
  }
}
