import type { Action, Area } from '../config/schema.js';
import { AppError } from '../errors/app-error.js';
import type { Permissions } from './permissions.js';
import type { Principal } from './principal.js';

/** Who an object belongs to (DESIGN.md section 5): the user who made it, and an optional owner. */
export interface Owned {
  creator?: string | null;
  owner?: string | null;
}

/**
 * An object that belongs to nobody and is used by everybody with the area
 * right, such as a repository's root collection.
 */
export const SHARED = 'shared' as const;

export type Target = Owned | typeof SHARED;

/**
 * Ownership decided in one place. Roles give a scope per area and action
 * (`permissions.ts`); this module says what the scope means for an object:
 * with `all` any object, with `own` those whose creator or owner is one of the
 * caller's identities (sub, preferred_username, upn, email). Services ask it;
 * nothing else compares creators or owners.
 */
export class Policy {
  constructor(private readonly permissions: Permissions) {}

  /** The roles' scope, limited to own objects for a principal that acts for its owner only (`ownOnly`). */
  private scope(p: Principal, area: Area, action: Action) {
    const scope = this.permissions.scope(p, area, action);
    return scope && p.ownOnly ? 'own' : scope;
  }

  /** Is the object the caller's own? */
  static isOwn(p: Principal, obj: Owned): boolean {
    return (!!obj.creator && p.identities.includes(obj.creator)) || (!!obj.owner && p.identities.includes(obj.owner));
  }

  /** May the caller do `action` in `area`, on `target` when given (else: on some object)? */
  may(p: Principal, area: Area, action: Action, target?: Target): boolean {
    const scope = this.scope(p, area, action);
    if (!scope) return false;
    return scope === 'all' || target === undefined || target === SHARED || Policy.isOwn(p, target);
  }

  /**
   * Throws 403 unless `may`: `FORBIDDEN` when the area right is missing,
   * `NOT_OWNER` when the object is somebody else's.
   */
  require(p: Principal, area: Area, action: Action, target?: Target): void {
    if (!this.scope(p, area, action)) throw new AppError('FORBIDDEN', `missing permission: ${action} on ${area}`, { area, action });
    if (!this.may(p, area, action, target)) {
      throw new AppError('NOT_OWNER', `this object belongs to another user (${action} on ${area} is limited to your own)`, { area, action });
    }
  }

  /**
   * `may` for every one of `actions` as a condition a statement can check on
   * the row itself: the identities the object's creator or owner must be
   * among (`own` scope for some action), undefined when any object will do,
   * or false when a right is missing whatever the object. Lets a guarded
   * UPDATE decide rights in its WHERE instead of a read, a check and a write.
   */
  ownedBy(p: Principal, area: Area, actions: readonly Action[]): string[] | undefined | false {
    const scopes = actions.map((a) => this.scope(p, area, a));
    if (scopes.some((s) => !s)) return false;
    return scopes.every((s) => s === 'all') ? undefined : [...p.identities];
  }

  /**
   * The identities a listing must be limited to (creator or owner among them),
   * or undefined when the caller sees all objects. 403 without the right.
   */
  listingScope(p: Principal, area: Area, action: Action = 'read'): string[] | undefined {
    this.require(p, area, action);
    return this.scope(p, area, action) === 'all' ? undefined : [...p.identities];
  }

  /**
   * The owner recorded for a new (or changed) object: `requested` (the
   * `x-owner` header, an `owner` field) or none. Naming anybody but yourself
   * needs `impersonate` in the area.
   */
  ownerFor(p: Principal, area: Area, requested: string | undefined): string | null {
    if (requested === undefined) return null;
    const owner = requested.trim();
    if (owner === '' || owner.length > 256) throw new AppError('INVALID_OWNER', 'x-owner must name a user (1-256 characters)');
    if (!p.identities.includes(owner) && !this.permissions.scope(p, area, 'impersonate')) {
      throw new AppError('IMPERSONATION_DENIED', `creating objects for ${owner} needs the impersonate permission on ${area}`, { area });
    }
    return owner;
  }
}
