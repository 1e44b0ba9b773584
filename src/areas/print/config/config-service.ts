import type { Principal } from '../../../auth/principal.js';
import type { Services } from '../../../runtime/services.js';
import { deleteConfigs, mergeConfigs, readConfigs } from './config-store.js';

/**
 * The configuration keys of `/v3/configs/` (a key/value object) in the
 * `configuration` area: reading for operators, changes for admins. Each
 * operation answers the whole object as it is afterwards. No HTTP.
 *
 * A change's input comes as a function, read after the rights check: a
 * caller without the right is refused (403) whatever it sent, as before any
 * look at the keys.
 */
export class PrintConfigService {
  constructor(private readonly s: Pick<Services, 'db' | 'policy'>) {}

  read(p: Principal): Promise<Record<string, unknown>> {
    this.s.policy.require(p, 'configuration', 'read');
    return readConfigs(this.s.db);
  }

  /** Sets each key to its value (the others stay). */
  async merge(p: Principal, entries: () => [string, unknown][]): Promise<Record<string, unknown>> {
    this.s.policy.require(p, 'configuration', 'write');
    await mergeConfigs(this.s.db, entries());
    return readConfigs(this.s.db);
  }

  /** Removes the keys (unknown ones are no error). */
  async remove(p: Principal, keys: () => string[]): Promise<Record<string, unknown>> {
    this.s.policy.require(p, 'configuration', 'delete');
    await deleteConfigs(this.s.db, keys());
    return readConfigs(this.s.db);
  }
}
