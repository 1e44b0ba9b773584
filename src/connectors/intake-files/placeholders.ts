/** What a template's `{placeholder}`s are filled from. */
export type PlaceholderValues = Readonly<Record<string, string | number>>;

const PLACEHOLDER = /\{([a-zA-Z][a-zA-Z0-9]*)\}/g;

/** The placeholder names in `text` that `known` does not have (for the configuration check). */
export function unknownPlaceholders(text: string, known: readonly string[]): string[] {
  return [...text.matchAll(PLACEHOLDER)].map((m) => m[1]!).filter((n) => !known.includes(n));
}

/**
 * Fills `{name}`-style placeholders in every string of `value` (objects and
 * arrays walked). A string that is exactly one placeholder of a number (say
 * `"{size}"`) becomes that number; unknown placeholders stay as written.
 */
export function fill<T>(value: T, values: PlaceholderValues): T {
  if (typeof value === 'string') {
    const whole = /^\{([a-zA-Z][a-zA-Z0-9]*)\}$/.exec(value);
    if (whole && typeof values[whole[1]!] === 'number') return values[whole[1]!] as T;
    return value.replace(PLACEHOLDER, (m, key: string) => (Object.hasOwn(values, key) ? String(values[key]) : m)) as T;
  }
  if (Array.isArray(value)) return value.map((v: unknown) => fill(v, values)) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v, values)])) as T;
  }
  return value;
}

/** Every string placeholder of a template, for `unknownPlaceholders`. */
export function stringsIn(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  if (value && typeof value === 'object') return Object.values(value).flatMap(stringsIn);
  return [];
}
