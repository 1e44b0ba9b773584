import type { Action, Area, AppConfig } from '../config/schema.js';
import { badRequest, forbidden } from '../errors/app-error.js';
import { isOwn, type Principal } from './principal.js';

export type Scope = 'own' | 'all';

/**
 * Roles-to-permissions from configuration. A caller holding several roles gets
 * the union: an action is allowed when any role grants it, and the scope is
 * `all` when any role granting that action sees all objects.
 */
export class Permissions {
  constructor(private readonly config: AppConfig['auth']) {}

  private rolesOf(p: Principal): string[] {
    const known = p.roles.filter((r) => r in this.config.roles);
    if (known.length === 0 && this.config.defaultRole) return [this.config.defaultRole];
    return known;
  }

  /** 403 unless the caller holds at least one configured role. */
  requireAnyRole(p: Principal): void {
    if (this.rolesOf(p).length === 0) {
      throw forbidden('NO_ROLE', `none of your roles (${p.roles.join(', ') || 'none'}) is known to this service`);
    }
  }

  /** The scope the caller has for `action` in `area`, or undefined when not allowed. */
  scope(p: Principal, area: Area, action: Action): Scope | undefined {
    let scope: Scope | undefined;
    for (const role of this.rolesOf(p)) {
      const grant = this.config.roles[role]?.areas[area];
      if (!grant || !grant.actions.includes(action)) continue;
      if (grant.scope === 'all') return 'all';
      scope = 'own';
    }
    return scope;
  }

  /** Throws 403 unless the caller may do `action` in `area`; returns the scope. */
  require(p: Principal, area: Area, action: Action): Scope {
    const scope = this.scope(p, area, action);
    if (!scope) throw forbidden('FORBIDDEN', `missing permission: ${action} on ${area}`, { area, action });
    return scope;
  }

  /** Throws 403 unless the caller may do `action` on this particular object. */
  requireOn(p: Principal, area: Area, action: Action, obj: { creator?: string | null; owner?: string | null }): void {
    const scope = this.require(p, area, action);
    if (scope === 'own' && !isOwn(p, obj)) {
      throw forbidden('NOT_OWNER', `this object belongs to another user (${action} on ${area} is limited to your own)`, { area, action });
    }
  }

  /**
   * Owner for a create: the `x-owner` header when given. Naming anybody but
   * yourself needs `impersonate` in the area.
   */
  ownerFor(p: Principal, area: Area, header: string | undefined): string | null {
    if (header === undefined) return null;
    const owner = header.trim();
    if (owner === '' || owner.length > 256) throw badRequest('INVALID_OWNER', 'x-owner must name a user (1-256 characters)');
    if (!p.identities.includes(owner) && !this.scope(p, area, 'impersonate')) {
      throw forbidden('IMPERSONATION_DENIED', `creating objects for ${owner} needs the impersonate permission on ${area}`, { area });
    }
    return owner;
  }
}
