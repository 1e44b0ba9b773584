import type { Principal } from '../../auth/principal.js';

/**
 * Whom a task's run acts for: the rights its items read documents with
 * (`ItemRunner`, and any connector that reads them on the task's behalf, such
 * as a print connector, through the repository service with `runAs`). They
 * are the task's owner's, else its creator's. Roles come only with a token,
 * so the task keeps its principal from its creation (`tasks.principal`,
 * migration 020) as role names: what they grant is the configuration's at
 * run time.
 */
export interface StoredPrincipal {
  user: string;
  identities: string[];
  roles: string[];
  /** Every scope limited to own objects (`Principal.ownOnly`). */
  ownOnly: boolean;
  /** Made by the runtime's own work (an intake): its rights, limited to own objects. */
  system?: true;
}

/**
 * The principal a new task keeps: its creator's, when the task is the
 * creator's own (no `x-owner`, or one of the creator's identities); for a task
 * created for another user (`x-owner`, which needs `impersonate`), that owner
 * as the only identity, with the creator's roles limited to the owner's own
 * objects: whatever the owner later puts into the input list, the run reads
 * no more than the owner's documents, however wide the creator's rights.
 */
export function principalToStore(creator: Principal, owner: string | null): StoredPrincipal {
  // a task of the runtime's own work (an intake): its run reads what the intake and the owner
  // own, never more, whatever is put into its input list later
  if (creator.system) {
    return { user: owner ?? creator.user, identities: owner ? [owner, creator.user] : [creator.user], roles: [], ownOnly: true, system: true };
  }
  if (owner === null || creator.identities.includes(owner)) {
    return { user: creator.user, identities: [...creator.identities], roles: [...creator.roles], ownOnly: false };
  }
  return { user: owner, identities: [owner], roles: [...creator.roles], ownOnly: true };
}

/**
 * The principal a task's run acts as. A task created before its principal
 * was kept (`principal` NULL) acts as its owner, else creator, with no role
 * (`auth.defaultRole` when configured), limited to own objects.
 */
export function runAs(task: { creator: string | null; owner: string | null; principal: StoredPrincipal | null }): Principal {
  const who = task.owner ?? task.creator;
  const stored = task.principal ?? { user: who ?? 'unknown', identities: who ? [who] : [], roles: [], ownOnly: true };
  return {
    user: stored.user, identities: stored.identities, roles: stored.roles, ownOnly: stored.ownOnly,
    ...(stored.system ? { system: true as const } : {}),
    // not a token's: no session to count, nothing expires
    session: '', expires: 0, claims: {},
  };
}
