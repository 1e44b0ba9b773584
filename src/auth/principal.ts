/** The authenticated caller, derived from a verified access token. */
export interface Principal {
  /** Recorded as `creator`: `preferred_username`, else `sub`. */
  user: string;
  /** Every identifier the user goes by: sub, preferred_username, upn, email. */
  identities: string[];
  roles: string[];
  /** OIDC session (`sid` claim) or token id, for counting sessions. */
  session: string;
  /** Token expiry, seconds since the epoch. */
  expires: number;
  claims: Record<string, unknown>;
  /**
   * Every scope limited to the user's own objects, whatever the roles grant
   * (`Policy`). Never set from a token: a task run acting for an owner other
   * than the task's creator (src/areas/tasks/task-principal.ts), or for what
   * the runtime's own work made.
   */
  ownOnly?: boolean;
  /**
   * The runtime acting on its own (an intake storing a file, creating a
   * task): every right (limited to own objects with `ownOnly`). Set only by
   * `systemPrincipal` and a system task's run, never from a token.
   */
  system?: true;
}

/** The principal of the runtime's own work, recorded as `user` (e.g. `hotfolder:<sid>`). */
export function systemPrincipal(user: string): Principal {
  return { user, identities: [user], roles: [], session: `system:${user}`, expires: Number.MAX_SAFE_INTEGER, claims: {}, system: true };
}

/** Reads a dotted claim path (`realm_access.roles`); arrays or space-separated strings. */
export function rolesFromClaims(claims: Record<string, unknown>, claimPath: string): string[] {
  let node: unknown = claims;
  for (const key of claimPath.split('.')) {
    // own properties only: a token's JSON must not reach Object.prototype
    if (typeof node !== 'object' || node === null || Array.isArray(node) || !Object.hasOwn(node, key)) return [];
    node = (node as Record<string, unknown>)[key];
  }
  if (Array.isArray(node)) return node.filter((r): r is string => typeof r === 'string');
  if (typeof node === 'string') return node.split(/[\s,]+/).filter(Boolean);
  return [];
}

export function principalFromClaims(claims: Record<string, unknown>, rolesClaim: string): Principal {
  const str = (k: string) => (Object.hasOwn(claims, k) && typeof claims[k] === 'string' && claims[k] !== '' ? (claims[k] as string) : undefined);
  const sub = str('sub');
  const identities = [...new Set([sub, str('preferred_username'), str('upn'), str('email')].filter((v): v is string => !!v))];
  return {
    user: str('preferred_username') ?? sub ?? 'unknown',
    identities,
    roles: rolesFromClaims(claims, rolesClaim),
    session: str('sid') ?? str('jti') ?? `${sub}:${String(claims.iat)}`,
    expires: typeof claims.exp === 'number' ? claims.exp : 0,
    claims,
  };
}
