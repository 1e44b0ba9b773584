import type { Metadata } from '../../../formats/index.js';

const isPlain = (v: unknown): v is Metadata => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * PATCH semantics for list and item metadata: nested objects merge key by
 * key, given values replace, nothing is removed. Own keys only, each defined
 * (never assigned), so a key such as `__proto__` stays data.
 */
export function mergeMetadata(base: Metadata, change: Metadata): Metadata {
  const out: Metadata = { ...base };
  for (const [k, v] of Object.entries(change)) {
    const old = Object.hasOwn(out, k) ? out[k] : undefined;
    Object.defineProperty(out, k, { value: isPlain(old) && isPlain(v) ? mergeMetadata(old, v) : v, enumerable: true, writable: true, configurable: true });
  }
  return out;
}
