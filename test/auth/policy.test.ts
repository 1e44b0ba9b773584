import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { Permissions } from '../../src/auth/permissions.js';
import { Policy, SHARED } from '../../src/auth/policy.js';
import { principalFromClaims, rolesFromClaims } from '../../src/auth/principal.js';
import { AppError } from '../../src/errors/app-error.js';

/** The ownership policy over the shipped role configuration (config/default.yaml). */
function policyWith(overrides: Record<string, unknown> = {}): { policy: Policy; permissions: Permissions } {
  const config = loadConfig({ env: {}, configDir: path.resolve('config'), overrides: { services: {}, ...overrides } });
  const permissions = new Permissions(config.auth);
  return { policy: new Policy(permissions), permissions };
}

const who = (user: string, roles: string[], extra: Record<string, unknown> = {}) =>
  principalFromClaims({ sub: `sub-${user}`, preferred_username: user, roles, ...extra }, 'roles');

const codeOf = (fn: () => unknown): string => {
  try {
    fn();
    return 'allowed';
  } catch (err) {
    return err instanceof AppError ? `${err.status} ${err.code}` : String(err);
  }
};

describe('ownership policy', () => {
  const { policy } = policyWith();
  const alice = who('alice', ['user'], { email: 'alice@example.com', upn: 'alice@corp' });
  const admin = who('root', ['admin']);
  const reader = who('rita', ['readonly']);

  it('own scope: an object is own when its creator or owner is any of the caller identities', () => {
    for (const id of ['alice', 'sub-alice', 'alice@example.com', 'alice@corp']) {
      expect(policy.may(alice, 'documents', 'write', { creator: id, owner: null }), id).toBe(true);
      expect(policy.may(alice, 'documents', 'write', { creator: 'bob', owner: id }), id).toBe(true);
    }
    expect(policy.may(alice, 'documents', 'write', { creator: 'bob', owner: 'carol' })).toBe(false);
    expect(policy.may(alice, 'documents', 'write', { creator: null, owner: null })).toBe(false);
    expect(codeOf(() => policy.require(alice, 'documents', 'write', { creator: 'bob' }))).toBe('403 NOT_OWNER');
    expect(codeOf(() => policy.require(alice, 'documents', 'write', { creator: 'alice' }))).toBe('allowed');
  });

  it('all scope covers every object; a missing right is FORBIDDEN whatever the object', () => {
    expect(policy.may(admin, 'documents', 'delete', { creator: 'bob' })).toBe(true);
    expect(codeOf(() => policy.require(reader, 'documents', 'write', { creator: 'rita' }))).toBe('403 FORBIDDEN');
    expect(codeOf(() => policy.require(reader, 'documents', 'write'))).toBe('403 FORBIDDEN');
    expect(policy.may(reader, 'documents', 'read', { creator: 'rita' })).toBe(true);
    expect(policy.may(reader, 'configuration', 'read')).toBe(false);
  });

  it('ownOnly (a task run acting for its owner): every scope limited to own objects, the rights themselves kept', () => {
    const forBob = { ...who('bob', ['admin']), identities: ['bob'], ownOnly: true };
    expect(policy.may(forBob, 'documents', 'read', { creator: 'bob' })).toBe(true);
    expect(policy.may(forBob, 'documents', 'read', { creator: 'alice' })).toBe(false);
    expect(codeOf(() => policy.require(forBob, 'documents', 'read', { creator: 'alice' }))).toBe('403 NOT_OWNER');
    expect(policy.listingScope(forBob, 'documents')).toEqual(['bob']);
    expect(policy.ownedBy(forBob, 'tasks', ['read', 'act'])).toEqual(['bob']);
    expect(policy.may({ ...forBob, roles: ['readonly'] }, 'documents', 'write', { creator: 'bob' })).toBe(false);
  });

  it('shared objects (the root collection) need only the area right', () => {
    expect(policy.may(alice, 'documents', 'write', SHARED)).toBe(true);
    expect(policy.may(reader, 'documents', 'read', SHARED)).toBe(true);
    expect(policy.may(reader, 'documents', 'write', SHARED)).toBe(false);
  });

  it('listings: limited to the caller identities with own scope, unlimited with all, 403 without the right', () => {
    expect(policy.listingScope(alice, 'documents')?.sort()).toEqual(['alice', 'alice@corp', 'alice@example.com', 'sub-alice']);
    expect(policy.listingScope(admin, 'documents')).toBeUndefined();
    expect(codeOf(() => policy.listingScope(reader, 'configuration'))).toBe('403 FORBIDDEN');
    // a union of roles: the widest scope wins
    expect(policy.listingScope(who('mix', ['user', 'operator']), 'documents')).toBeUndefined();
  });

  it('owner for a create: none, yourself under any identity, or somebody else with impersonate', () => {
    expect(policy.ownerFor(alice, 'documents', undefined)).toBeNull();
    expect(policy.ownerFor(alice, 'documents', ' alice@example.com ')).toBe('alice@example.com');
    expect(codeOf(() => policy.ownerFor(alice, 'documents', 'dave'))).toBe('403 IMPERSONATION_DENIED');
    expect(policy.ownerFor(admin, 'documents', 'dave')).toBe('dave');
    expect(codeOf(() => policy.ownerFor(admin, 'documents', '  '))).toBe('400 INVALID_OWNER');
    expect(codeOf(() => policy.ownerFor(admin, 'documents', 'x'.repeat(257)))).toBe('400 INVALID_OWNER');
  });

  it('role names that are Object.prototype members are unknown roles', () => {
    const { permissions } = policyWith();
    for (const role of ['constructor', 'valueOf', 'toString', '__proto__', 'hasOwnProperty']) {
      const p = who(`u-${role}`, [role]);
      expect(codeOf(() => permissions.requireAnyRole(p)), role).toBe('403 NO_ROLE');
      expect(policy.may(p, 'documents', 'read', SHARED), role).toBe(false);
      expect(codeOf(() => policy.listingScope(p, 'documents')), role).toBe('403 FORBIDDEN');
    }
  });

  it('the default role applies only when no role is known, and only if it is configured', () => {
    const withDefault = policyWith({ auth: { defaultRole: 'readonly' } }).policy;
    expect(withDefault.may(who('g', ['guest']), 'documents', 'read', SHARED)).toBe(true);
    expect(withDefault.may(who('g', ['guest']), 'documents', 'write', SHARED)).toBe(false);
    // a default role must be one of the configured roles; Object.prototype members are not
    for (const role of ['constructor', 'toString', '__proto__']) {
      expect(() => policyWith({ auth: { defaultRole: role } }), role).toThrow(/auth\.defaultRole/);
    }
  });

  it('role claims are read from own properties of the token only', () => {
    expect(rolesFromClaims({ realm: { roles: ['a', 'b'] } }, 'realm.roles')).toEqual(['a', 'b']);
    expect(rolesFromClaims({ roles: 'a, b c' }, 'roles')).toEqual(['a', 'b', 'c']);
    expect(rolesFromClaims({}, 'constructor')).toEqual([]);
    expect(rolesFromClaims({ realm: {} }, 'realm.toString')).toEqual([]);
    expect(principalFromClaims({ sub: 's' }, 'roles').identities).toEqual(['s']);
  });
});
