import { m001Init } from './001-init.js';
import { m002RepoGenerations } from './002-repo-generations.js';
import { m003Outbox } from './003-outbox.js';
import { m004JobRecreations } from './004-job-recreations.js';
import { m005ConnectorLeases } from './005-connector-leases.js';
import { m006Tasks } from './006-tasks.js';
import { m007TaskItemStates } from './007-task-item-states.js';
import { m008Lists } from './008-lists.js';
import { m009Print } from './009-print.js';
import { m010ListItemIngest } from './010-list-item-ingest.js';
import { m013OutboxRowTrigger } from './013-outbox-row-trigger.js';
import { m016PrintDocuments } from './016-print-documents.js';
import { m017PrintJobListing } from './017-print-job-listing.js';
import { m018IntakeFiles } from './018-intake-files.js';
import { m020TaskPrincipal } from './020-task-principal.js';
import { m021PrintTaskJobs } from './021-print-task-jobs.js';
import { m022PanelsConfigSessions } from './022-panels-config-sessions.js';
import { m023Messages } from './023-messages.js';
import { m024Events } from './024-events.js';
import { m025Deployment } from './025-deployment.js';
import { m026TaskProgress } from './026-task-progress.js';
import { m027MessageEvents } from './027-message-events.js';
import { m028TaskHooks } from './028-task-hooks.js';
import { m029PrintHandoffToken } from './029-print-handoff-token.js';

/** A forward-only schema change; `id`s are applied in order, each once. */
export interface Migration {
  id: number;
  name: string;
  sql: string;
  /**
   * `false` runs `sql` outside a transaction, for statements that refuse one
   * (`CREATE INDEX CONCURRENTLY` on a large table). Such a migration must be a
   * single statement. If it fails half-way nothing is recorded and the next
   * start runs it again; a failed `CREATE INDEX CONCURRENTLY` leaves an
   * INVALID index behind that an operator drops first. Default: one
   * transaction together with its bookkeeping row.
   */
  transaction?: boolean;
}

/**
 * Every migration, in order. Never edit one that has shipped: add a new one.
 * A migration is frozen text: its SQL is written out, never built from live
 * code (a state table's values are copied in, as 007 and 017 do), so it runs
 * the same SQL forever. Each applied migration's checksum is recorded, and a
 * start against a database that applied an edited one fails (`migrate.ts`).
 */
export const MIGRATIONS: readonly Migration[] = [m001Init, m002RepoGenerations, m003Outbox, m004JobRecreations, m005ConnectorLeases, m006Tasks, m007TaskItemStates, m008Lists, m009Print, m010ListItemIngest, m013OutboxRowTrigger, m016PrintDocuments, m017PrintJobListing, m018IntakeFiles, m020TaskPrincipal,
  m021PrintTaskJobs, m022PanelsConfigSessions, m023Messages, m024Events, m025Deployment, m026TaskProgress, m027MessageEvents, m028TaskHooks,
  m029PrintHandoffToken];
