import { SHARED, type Policy } from '../../auth/policy.js';
import type { Principal } from '../../auth/principal.js';
import { AppError } from '../../errors/app-error.js';
import type { Database } from '../../storage/driver/database.js';
import { parseConfigPath } from './config-path.js';
import * as store from './store/config-item-store.js';

const notFound = (path: string) => new AppError('CONFIG_NOT_FOUND', path === '' ? 'the configuration tree is empty' : `nothing is stored at "${path}"`, { path });

/**
 * The configuration tree (spec: Configuration): one tree shared by every
 * user, its rights those of the `configuration` area (read, write, delete;
 * by default operators read, admins change). Paths come as the client sent
 * them and are checked (`config-path.ts`) after the rights: a caller
 * without the right is refused (403) whatever it sent. An item is a JSON object stored at a path; an item
 * may have items below it. No HTTP; all SQL in `store/config-item-store.ts`.
 */
export class ConfigTreeService {
  constructor(private readonly o: { db: Database; policy: Policy }) {}

  /** The item at `path` (404 when none). */
  async get(p: Principal, rawPath: string | undefined): Promise<unknown> {
    this.o.policy.require(p, 'configuration', 'read', SHARED);
    const path = parseConfigPath(rawPath, { allowRoot: false });
    const row = await store.getItem(this.o.db, path);
    if (!row) throw notFound(path);
    return row.value;
  }

  /**
   * Every item path strictly below `path` (all of them for `''`), in byte
   * order, streamed. The first is read before this resolves: 404 when there
   * is none.
   */
  async keys(p: Principal, rawPath: string | undefined): Promise<AsyncIterable<string>> {
    this.o.policy.require(p, 'configuration', 'read', SHARED);
    const path = parseConfigPath(rawPath, { allowRoot: true });
    const it = store.keysBelow(this.o.db, path)[Symbol.asyncIterator]();
    const first = await it.next();
    if (first.done) throw notFound(path);
    return (async function* () {
      yield first.value;
      for (let next = await it.next(); !next.done; next = await it.next()) yield next.value;
    })();
  }

  /** Stores `value` at `path` (created or replaced); the stored item. The body is read after the rights check. */
  async put(p: Principal, rawPath: string | undefined, value: () => Record<string, unknown>): Promise<unknown> {
    this.o.policy.require(p, 'configuration', 'write', SHARED);
    const path = parseConfigPath(rawPath, { allowRoot: false });
    return (await store.putItem(this.o.db, path, value(), p.user)).value;
  }

  /** Deletes the item at `path`, or the whole subtree below it (404 when nothing is there); the path and how many items went. */
  async remove(p: Principal, rawPath: string | undefined): Promise<{ path: string; deleted: number }> {
    this.o.policy.require(p, 'configuration', 'delete', SHARED);
    const path = parseConfigPath(rawPath, { allowRoot: false });
    const deleted = await store.deleteTree(this.o.db, path);
    if (deleted === 0) throw notFound(path);
    return { path, deleted };
  }
}
