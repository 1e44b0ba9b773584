import type { Metadata } from './list-document.js';

/**
 * CSV columns and RList keys are flat; metadata is a JSON object. A key path
 * joins the keys from the root with `.`, and a `.` or `\` inside a key is
 * escaped with `\`, so every object flattens to distinct paths and back
 * (docs/formats.md). Leaves are strings: other JSON values are written as their
 * JSON text and come back as that string; empty objects have no leaf.
 */

/** Splits `a.b\.c` into `['a', 'b.c']`. A `\` before anything but `.` or `\` is kept as is. */
export function splitPath(path: string): string[] {
  const segments: string[] = [];
  let current = '';
  for (let i = 0; i < path.length; i++) {
    const c = path[i]!;
    if (c === '\\' && (path[i + 1] === '.' || path[i + 1] === '\\')) {
      current += path[++i];
    } else if (c === '.') {
      segments.push(current);
      current = '';
    } else {
      current += c;
    }
  }
  segments.push(current);
  return segments;
}

export function joinPath(segments: readonly string[]): string {
  return segments.map((s) => s.replace(/[\\.]/g, '\\$&')).join('.');
}

const isObject = (v: unknown): v is Metadata => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The leaves of a metadata object, in key order: `[segments, string value]`. */
export function* flatten(meta: Metadata, prefix: string[] = []): Generator<[string[], string]> {
  for (const key of Object.keys(meta)) {
    const value = meta[key];
    const path = [...prefix, key];
    if (isObject(value)) yield* flatten(value, path);
    else if (typeof value === 'string') yield [path, value];
    else if (value !== undefined) yield [path, JSON.stringify(value)];
  }
}

/** What `MetadataBuilder.set` found at the path. */
export type SetResult = 'new' | 'same' | 'conflict';

/**
 * Builds a metadata object from paths, refusing a path that runs through a
 * string (`a` and `a.b`) and counting leaves against a limit. Keys come from
 * the input, so they are defined as own properties and looked up with
 * `Object.hasOwn`: `__proto__` is a key like any other.
 */
export class MetadataBuilder {
  readonly root: Metadata = {};
  private leaves = 0;

  constructor(private readonly maxKeys: number) {}

  get size(): number {
    return this.leaves;
  }

  /** 'same' when the path already holds this value, 'conflict' when it holds another or runs through a string. */
  set(path: readonly string[], value: string): SetResult | 'full' {
    let node = this.root;
    for (let i = 0; i < path.length - 1; i++) {
      const key = path[i]!;
      if (!Object.hasOwn(node, key)) define(node, key, {});
      const next = node[key];
      if (!isObject(next)) return 'conflict';
      node = next;
    }
    const last = path[path.length - 1]!;
    if (Object.hasOwn(node, last)) return node[last] === value ? 'same' : 'conflict';
    if (this.leaves >= this.maxKeys) return 'full';
    define(node, last, value);
    this.leaves++;
    return 'new';
  }
}

function define(target: Metadata, key: string, value: unknown): void {
  // an assignment is several times faster; only "__proto__" would run a setter instead of making a key
  if (key !== '__proto__') target[key] = value;
  else Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
