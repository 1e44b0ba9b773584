import type { EntryRowsPort } from '../../connectors/facets/repository.js';
import type { Sql } from '../../storage/driver/database.js';
import * as store from './entry-store.js';

/**
 * The `EntryRowsPort` of one service over `sql` (the transaction of a sync,
 * or the database for a refresh on its own): how a backend keeps the rows in
 * step with its tree while the entry store stays the only writer of `entries`.
 */
export function entryRows(sql: Sql, sid: string): EntryRowsPort {
  return {
    children: (parent) => store.syncChildren(sql, sid, parent),
    childCollections: (parent) => store.childCollections(sql, sid, parent),
    get: (uuid) => store.getEntry(sql, sid, uuid),
    add: (parent, found) => store.insertFound(sql, sid, parent, found),
    remove: (parent, seen) => store.deleteSeen(sql, sid, parent, seen),
    removeChildrenBelow: (parent, path) => store.deleteChildrenBelow(sql, sid, parent, path),
    removeAt: (uuid, path) => store.deleteAtPath(sql, sid, uuid, path),
    updateContent: (changes) => store.updateFoundContent(sql, sid, changes),
  };
}
