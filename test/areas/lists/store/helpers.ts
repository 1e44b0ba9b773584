import { afterAll, beforeAll } from 'vitest';
import * as store from '../../../../src/areas/lists/store/list-store.js';
import type { ListItem } from '../../../../src/formats/index.js';
import type { Database } from '../../../../src/storage/driver/database.js';
import type { TestDatabase } from '../../../helpers/databases.js';

/** `n` items `/doc/<i>` with metadata `{ n: '<i>' }`, from `from` on. */
export const items = (n: number, from = 0): ListItem[] =>
  Array.from({ length: n }, (_, i) => ({ href: `/doc/${from + i}`, metadata: { n: String(from + i) } }));

/** Opens a database (one of `bothDrivers`) for the enclosing describe block and drops it afterwards; `set` hands it to the suite. */
export function useDatabase(open: () => Promise<TestDatabase>, set: (db: Database) => void): void {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await open();
    set(t.db);
  });
  afterAll(() => t.drop());
}

/** A user list named L with nested metadata, created by `creator`. */
export const newUserList = (db: Database, creator = 'ann') => store.createList(db, { kind: 'user', name: 'L', metadata: { a: { b: '1' } }, creator });
