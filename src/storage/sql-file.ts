import { readFileSync } from 'node:fs';

/** The text of a statement file beside a store, read once at module load. */
export function sqlFile(url: URL): string {
  return readFileSync(url, 'utf8');
}
