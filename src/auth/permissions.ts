import type { Action, Area, AppConfig } from '../config/schema.js';
import { AppError } from '../errors/app-error.js';
import type { Principal } from './principal.js';

export type Scope = 'own' | 'all';

type Role = AppConfig['auth']['roles'][string];

/**
 * Roles-to-permissions from configuration. A caller holding several roles gets
 * the union: an action is allowed when any role grants it, and the scope is
 * `all` when any role granting that action sees all objects. Whether a scope
 * covers a given object is decided in `policy.ts`, not here.
 *
 * Role names come from tokens, so they are looked up in a Map: a role called
 * `constructor` or `valueOf` is unknown, not a property of Object.prototype.
 */
export class Permissions {
  private readonly roles: ReadonlyMap<string, Role>;
  /** A principal's configured roles, computed once per principal (verified tokens are cached, so are their principals). */
  private readonly known = new WeakMap<Principal, Role[]>();

  constructor(private readonly config: AppConfig['auth']) {
    this.roles = new Map(Object.entries(config.roles));
  }

  private rolesOf(p: Principal): Role[] {
    let roles = this.known.get(p);
    if (!roles) {
      roles = p.roles.flatMap((r) => this.roles.get(r) ?? []);
      if (roles.length === 0 && this.config.defaultRole !== undefined) {
        const fallback = this.roles.get(this.config.defaultRole);
        roles = fallback ? [fallback] : [];
      }
      this.known.set(p, roles);
    }
    return roles;
  }

  /** 403 unless the caller holds at least one configured role. */
  requireAnyRole(p: Principal): void {
    if (!p.system && this.rolesOf(p).length === 0) {
      throw new AppError('NO_ROLE', `none of your roles (${p.roles.join(', ') || 'none'}) is known to this service`);
    }
  }

  /** The scope the caller has for `action` in `area`, or undefined when not allowed. */
  scope(p: Principal, area: Area, action: Action): Scope | undefined {
    if (p.system) return 'all';
    let scope: Scope | undefined;
    for (const role of this.rolesOf(p)) {
      const grant = Object.hasOwn(role.areas, area) ? role.areas[area] : undefined;
      if (!grant || !grant.actions.includes(action)) continue;
      if (grant.scope === 'all') return 'all';
      scope = 'own';
    }
    return scope;
  }
}
