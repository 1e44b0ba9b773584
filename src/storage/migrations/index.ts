import { m001Init } from './001-init.js';
import { m002RepoGenerations } from './002-repo-generations.js';
import { m004ConnectorLeases } from './004-connector-leases.js';

/** A forward-only schema change; `id`s are applied in order, each once. */
export interface Migration {
  id: number;
  name: string;
  sql: string;
}

/** Every migration, in order. Never edit one that has shipped: add a new one. */
export const MIGRATIONS: readonly Migration[] = [m001Init, m002RepoGenerations, m004ConnectorLeases];
