import type { EntryRow } from './entry.js';

interface Cached {
  gen: number;
  parent: EntryRow;
  json: string;
}

/**
 * Serialized children listings, reused while the service's change counter
 * (repo_generations, moved by a trigger on every entry change) stays the same.
 * Backends polling the same collection get the stored JSON after one small
 * query instead of a listing query, row decoding and serializing. Each API
 * process has its own; the counter lives in PostgreSQL, so all agree on what
 * is current. Bounded by total bytes; least recently used entries go first.
 */
export class ListingCache {
  private readonly entries = new Map<string, Cached>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  get enabled(): boolean {
    return this.maxBytes > 0;
  }

  /** The listing when it was stored at generation `gen`; a stale one is dropped. */
  get(key: string, gen: number): Cached | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    this.entries.delete(key);
    if (hit.gen !== gen) {
      this.bytes -= hit.json.length;
      return undefined;
    }
    this.entries.set(key, hit); // most recently used goes last
    return hit;
  }

  set(key: string, value: Cached): void {
    if (value.json.length > this.maxBytes / 4) return;
    const old = this.entries.get(key);
    if (old) {
      this.entries.delete(key);
      this.bytes -= old.json.length;
    }
    this.entries.set(key, value);
    this.bytes += value.json.length;
    for (const [k, v] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(k);
      this.bytes -= v.json.length;
    }
  }
}
