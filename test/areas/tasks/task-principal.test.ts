import { describe, expect, it } from 'vitest';
import { principalFromClaims } from '../../../src/auth/principal.js';
import { principalToStore, runAs } from '../../../src/areas/tasks/task-principal.js';

/** Whom a task's runs act for (tasks.principal, migration 020): what creation keeps, what a run acts as. */
describe('task principal', () => {
  const root = principalFromClaims({ sub: 'sub-root', preferred_username: 'root', email: 'root@example.com', roles: ['admin'] }, 'roles');

  it("rights: a task of the creator's own keeps the creator's identities and roles", () => {
    const own = { user: 'root', identities: ['sub-root', 'root', 'root@example.com'], roles: ['admin'], ownOnly: false };
    expect(principalToStore(root, null)).toEqual(own);
    expect(principalToStore(root, 'root@example.com')).toEqual(own); // x-owner naming oneself
  });

  it("rights: a task created for another user acts as that user alone, with the creator's roles limited to own objects", () => {
    expect(principalToStore(root, 'bob')).toEqual({ user: 'bob', identities: ['bob'], roles: ['admin'], ownOnly: true });
    expect(runAs({ creator: 'root', owner: 'bob', principal: principalToStore(root, 'bob') })).toMatchObject({ user: 'bob', identities: ['bob'], roles: ['admin'], ownOnly: true });
  });

  it('rights: a task from before its principal was kept acts as its owner, else creator, with no role, own objects only', () => {
    expect(runAs({ creator: 'ann', owner: 'bob', principal: null })).toMatchObject({ user: 'bob', identities: ['bob'], roles: [], ownOnly: true });
    expect(runAs({ creator: 'ann', owner: null, principal: null })).toMatchObject({ user: 'ann', identities: ['ann'], roles: [], ownOnly: true });
    expect(runAs({ creator: null, owner: null, principal: null })).toMatchObject({ identities: [], roles: [] });
  });
});
