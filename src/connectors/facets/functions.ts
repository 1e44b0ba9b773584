import type { Principal } from '../../auth/principal.js';
import { AppError } from '../../errors/app-error.js';
import type { Action, Area } from '../../config/schema.js';
import type { ConnectorPorts, IntakeClaimsPort } from '../ports.js';

/** Function ids are path segments: letters, digits, `_`, `-`, `.`. */
export const FID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

/** One parameter of a function; values from a query string (`k::v;...`) are coerced to `type`. */
export interface FunctionParameter {
  name: string;
  type: 'string' | 'number' | 'integer' | 'boolean';
  required: boolean;
  description: string;
  /** A value that works for the configured instance (the contract suite calls with it; e.g. a watched folder's path). */
  example?: string | number | boolean;
}

/** What `GET .../function` lists (DESIGN.md "Functions"). */
export interface FunctionDescriptor {
  fid: string;
  description: string;
  parameters: readonly FunctionParameter[];
  /**
   * The right a caller needs besides a known role (DESIGN.md section 5), e.g.
   * `{ area: 'documents', action: 'read' }` for a function that shows files;
   * absent: any known role may call it.
   */
  requires?: { area: Area; action: Action };
}

/** Validated parameters: declared names only, typed; a null-prototype object. */
export type FunctionParams = Readonly<Record<string, string | number | boolean>>;

export interface FunctionContext extends ConnectorPorts {
  principal: Principal;
  /** The service's intake claims (`intake_files`), for reading what an intake has in hand. */
  claims: IntakeClaimsPort;
  /** Aborts when the caller goes away. */
  signal: AbortSignal;
}

/**
 * The `functions` facet: synchronous, service-specific calls. `call` gets
 * parameters already checked against the descriptor (`callFunction` does
 * that) and returns a JSON-serializable result; an `AppError` it throws
 * becomes the response.
 */
export interface FunctionsFacet {
  readonly list: readonly FunctionDescriptor[];
  call(fid: string, params: FunctionParams, ctx: FunctionContext): Promise<unknown>;
}

function coerce(p: FunctionParameter, raw: unknown): string | number | boolean | undefined {
  switch (p.type) {
    case 'string':
      return typeof raw === 'string' ? raw : typeof raw === 'number' || typeof raw === 'boolean' ? String(raw) : undefined;
    case 'boolean':
      if (typeof raw === 'boolean') return raw;
      return raw === 'true' ? true : raw === 'false' ? false : undefined;
    case 'number':
    case 'integer': {
      const n = typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : NaN;
      if (!Number.isFinite(n) || (p.type === 'integer' && !Number.isInteger(n))) return undefined;
      return n;
    }
  }
}

/**
 * Checks `raw` (query pairs as strings, or a JSON object) against the
 * descriptor: 400 `INVALID_PARAMETERS` naming each unknown, missing or
 * mistyped parameter; nothing is called then.
 */
export function parseFunctionParams(d: FunctionDescriptor, raw: Readonly<Record<string, unknown>>): FunctionParams {
  const out: Record<string, string | number | boolean> = Object.create(null);
  const issues: string[] = [];
  const declared = new Map(d.parameters.map((p) => [p.name, p]));
  for (const key of Object.keys(raw)) if (!declared.has(key)) issues.push(`${key.slice(0, 64)}: unknown parameter`);
  for (const p of d.parameters) {
    if (!Object.hasOwn(raw, p.name)) {
      if (p.required) issues.push(`${p.name}: required`);
      continue;
    }
    const v = coerce(p, raw[p.name]);
    if (v === undefined) issues.push(`${p.name}: expected ${p.type}`);
    else out[p.name] = v;
  }
  if (issues.length > 0) throw new AppError('INVALID_PARAMETERS', `invalid parameters for ${d.fid}: ${issues.join('; ')}`, { fid: d.fid, issues });
  return out;
}

/** The one way to call a function: 404 `FUNCTION_NOT_FOUND`, then the parameter check, then `call`. */
export async function callFunction(
  facet: FunctionsFacet, fid: string, raw: Readonly<Record<string, unknown>>, ctx: FunctionContext,
): Promise<unknown> {
  const d = facet.list.find((f) => f.fid === fid);
  if (!d) throw new AppError('FUNCTION_NOT_FOUND', `no function "${fid.slice(0, 64)}"`, { fid: fid.slice(0, 64) });
  return facet.call(fid, parseFunctionParams(d, raw), ctx);
}
