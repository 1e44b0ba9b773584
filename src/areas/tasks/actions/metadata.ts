const isPlain = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * An item's effective metadata (DESIGN.md section 6): the layers merged
 * lowest priority first (repository document, task, input list, item).
 * Objects merge key by key at every depth; anything else is replaced.
 * Own keys only, into null-prototype objects, so `__proto__` stays a key.
 */
export function mergeMetadata(...layers: readonly Readonly<Record<string, unknown>>[]): Record<string, unknown> {
  const out: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const layer of layers) {
    for (const key of Object.keys(layer)) {
      const value = layer[key];
      const prev = Object.hasOwn(out, key) ? out[key] : undefined;
      out[key] = isPlain(value) && isPlain(prev) ? mergeMetadata(prev, value) : isPlain(value) ? mergeMetadata(value) : value;
    }
  }
  return out;
}
