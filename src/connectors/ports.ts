import type { Readable } from 'node:stream';
import type { Logger } from '../logging/logger.js';
import type { Outbox } from '../outbox/outbox.js';
import type { JobData, JobName } from '../queue/jobs.js';
import type { Sql } from '../storage/driver/database.js';

/**
 * Narrow ports: what a connector gets at start instead of the runtime's
 * services. A connector never sees the whole `Database` or the queue: it
 * reaches its own rows through `state`, queue work through `outbox`.
 */
export interface ConnectorPorts {
  /** The connector's logger (bound to its `sid`). */
  readonly log: Logger;
  /** Queue work (jobs declared in `src/queue/jobs.ts`). */
  readonly outbox: OutboxPort;
  /** Durable key/value state of this service, shared by every process. */
  readonly state: ConnectorStateStore;
}

/** What an intake facet gets at start besides the common ports. */
export interface IntakePorts extends ConnectorPorts {
  /** The durable claims of the files an intake takes (`intake_files`). */
  readonly claims: IntakeClaimsPort;
  /** Work on other services (store documents, create and start tasks), as the runtime does it for the API. */
  readonly work: WorkPort;
  /** What an intake reports to `/metrics`. */
  readonly metrics: IntakeMetricsPort;
  /** Messages to users (workflow API Messages): an import that failed, told to whom it concerns. */
  readonly messages: MessagePort;
}

/** A file as an intake claims it: where, what it looked like, and the ids its document and task will have. */
export interface IntakeFileFacts {
  /** The watched folder (absolute) or the import URL. */
  source: string;
  name: string;
  size: number;
  mtimeMs: number | null;
  /** `dev:ino`: a file replaced at the same name is another file. */
  ino: string | null;
  sha256: string;
  docUuid: string | null;
  tid: string | null;
}

/** A claim as stored. */
export interface IntakeClaim extends IntakeFileFacts {
  id: string;
  state: 'claimed' | 'stored' | 'done' | 'failed';
  docName: string | null;
  claimed: Date;
}

/**
 * The claims of one service's intake (`intake_files`). A claim is written
 * before anything of the file is stored; at most one is unfinished per source
 * and name. Writes of a single-instance service are fenced by its lease: they
 * throw `LeaseLostError` once another process holds it.
 */
export interface IntakeClaimsPort {
  /** Claims the file, or returns the unfinished claim of that name (`fresh` false: resume or reconcile it). */
  claim(f: IntakeFileFacts): Promise<{ claim: IntakeClaim; fresh: boolean }>;
  /** The unfinished claims under `source`, oldest first (what a crash left). */
  unfinished(source: string): Promise<IntakeClaim[]>;
  /** The document is stored (under `docName`). */
  markStored(id: string, docName: string): Promise<void>;
  /**
   * Done (the source moved or deleted) or failed (moved to `error/`), with the
   * reason; `stored` records the document made and when (for an intake that
   * finishes without marking it stored first: its document is the record).
   */
  finish(id: string, state: 'done' | 'failed', reason?: unknown, stored?: { docName: string; at: Date }): Promise<void>;
  /** Forgets an unfinished claim: nothing of the file is kept; it is taken again later. */
  release(id: string): Promise<void>;
  /** Was this content under this name already taken (a finished, successful claim)? */
  taken(source: string, name: string, sha256: string): Promise<boolean>;
  /** Deletes finished claims older than `days`; how many went. */
  prune(days: number, limit?: number): Promise<number>;
}

/** A document an intake stores. */
export interface IntakeDocument {
  /** The repository service. */
  service: string;
  /** Fixed at the claim: storing twice with one uuid stores once. */
  uuid: string;
  /** Its claim was made just now (a fresh uuid): no document of this uuid can exist yet, so none is looked for first. */
  fresh?: boolean;
  /** A collection path below the root (`a/b`), created when missing; the root when absent. */
  collection?: string;
  /** Wanted name; a name in use gets ` (2)`, ` (3)`, ... before its extension. */
  name: string;
  /** Opens the content (again, for a retry). */
  open(): Readable;
  /** The content as an open file descriptor (read from its start), when it is one: a backend that copies files (`writeFile`) copies it off the main thread; `open` serves the others. */
  fd?: number;
  /** The content's sha256 as claimed: a stored content that differs fails with `ContentChangedError`. */
  sha256: string;
  mimeType?: string;
  metadata: Record<string, unknown>;
  /** Recorded as creator (e.g. `hotfolder:<sid>`). */
  creator: string;
  owner: string | null;
}

/** A stored document's identity. */
export interface StoredDocument {
  uuid: string;
  name: string;
  /** What a task item names it by. */
  href: string;
}

/** A task an intake creates. */
export interface IntakeTask {
  service: string;
  /** Fixed at the claim: creating twice with one tid creates once. */
  tid: string;
  name: string;
  metadata: Record<string, unknown>;
  /** Input items (document hrefs with item metadata). */
  items?: { href: string; metadata?: Record<string, unknown> }[];
  /** Or: the input list from a CSV / RList body. */
  list?: { format: 'csv' | 'rlist'; body: Readable };
  creator: string;
  owner: string | null;
}

/**
 * What an intake may do on other services. The runtime implements it with
 * the same services the API uses (`src/runtime/work-port.ts`), acting as the
 * system user named by `creator`; every method is idempotent by the id the
 * caller fixed, so a retry after a crash never doubles anything.
 */
export interface WorkPort {
  /** Stores the document, or returns it when one with this uuid and content is stored already. */
  storeDocument(doc: IntakeDocument): Promise<StoredDocument>;
  /** The document of this uuid when it exists with this content (an intake's proof that it was stored). */
  storedDocument(service: string, uuid: string, sha256: string): Promise<StoredDocument | undefined>;
  /** Removes the document if it exists (a failed intake leaves nothing). */
  removeDocument(service: string, uuid: string): Promise<void>;
  /** Creates the task (with its input list) unless a task with this tid exists; true when created now. */
  createTask(task: IntakeTask): Promise<boolean>;
  /** Starts the task unless it was started already. */
  startTask(service: string, tid: string, creator: string): Promise<void>;
  /** Removes the task if it exists and never started. */
  removeTask(service: string, tid: string, creator: string): Promise<void>;
}

/** An intake's metrics, per service. */
export interface IntakeMetricsPort {
  taken(seconds: number): void;
  failed(code: string): void;
}

/**
 * Records a job to run. With `tx`, the job belongs to that transaction: it is
 * delivered only if the transaction commits (the transactional outbox).
 * The runtime wires it to the outbox (`outboxPort`).
 */
export interface OutboxPort {
  add<N extends JobName>(name: N, data: JobData<N>, tx?: Sql): Promise<void>;
}

/**
 * The connectors' outbox port over the runtime's outbox: with `tx`, the job
 * commits with the connector's own change; without, it is written on its own
 * (autocommitted) and relayed at once.
 */
export function outboxPort(outbox: Outbox, db: Sql): OutboxPort {
  return {
    async add(name, data, tx) {
      await outbox.add(tx ?? db, name, data);
    },
  };
}

/** A stored content differs from the claimed one: the file changed while it was read. */
export class ContentChangedError extends Error {
  override readonly name = 'ContentChangedError';
}

/** One stored value with the database time it was last written. */
export interface StateEntry {
  key: string;
  value: unknown;
  updated: Date;
}

/**
 * A service's own durable state (`connector_state`, scoped to its `sid`): what
 * an intake connector needs to take each file once, a scheduler's last run, a
 * heartbeat. Values are JSON.
 */
export interface ConnectorStateStore {
  get(key: string): Promise<StateEntry | undefined>;
  /** Inserts or replaces. */
  put(key: string, value: unknown): Promise<void>;
  /** Inserts only when the key is new; false when it already existed (a claim). */
  putIfAbsent(key: string, value: unknown): Promise<boolean>;
  /** Adds `by` (default 1) to the number stored under `key` (absent: 0) in one statement; returns the new number. */
  increment(key: string, by?: number): Promise<number>;
  delete(key: string): Promise<boolean>;
  /** Entries whose key starts with `prefix`, by key, at most `limit` (default 1000). */
  list(prefix: string, limit?: number): Promise<StateEntry[]>;
}

/** A message a connector posts to a user (workflow API "Messages"). */
export interface PostedMessage {
  /**
   * Fixed by the caller to post at most once: a second post with the same
   * uuid (a retry after a crash) changes nothing. Absent: a new uuid.
   */
  uuid?: string;
  type: 'info' | 'warning' | 'error';
  text: string;
  /** What it is about, e.g. `csv:<sid>`. */
  source?: string;
  /** A link to the object it is about. */
  href?: string;
  metadata?: Record<string, unknown>;
}

/**
 * Posts messages to users; the runtime implements it with the messages area
 * (`MessageService`). Idempotent by `uuid`.
 */
export interface MessagePort {
  post(user: string, message: PostedMessage): Promise<void>;
}

// ---------------------------------------------------------------- ports a connector type asks for

/**
 * A print job as the `print` port shows it to a connector: its state in the
 * print API's words (`waitprocessing`, `processing`, `processed`, `error`, ...).
 */
export interface PrintJobView {
  id: string;
  status: string;
  printer: string;
  fileName: string | null;
  message: string | null;
  /** `/v3/jobs/<id>`. */
  href: string;
}

/** One task item to print: the port reads the document with the task's rights and makes it a job. */
export interface PrintItemSubmission {
  sid: string;
  tid: string;
  /** The input item's id. */
  item: string;
  /** A repository document (`/v1/services/<sid>/repo/<uuid>`), read with the rights of the task's principal. */
  href: string;
  printer: string;
  copies?: number;
  priority?: number;
  /** A flow name; absent: the printer's. */
  flow?: string;
  /** The job's name (default: the document's name). */
  name?: string;
}

/** A printer as the `print` port shows it. */
export interface PrinterView {
  name: string;
  /** The print API's runtime status: idle, printing, paused, error, disabled. */
  state: string;
  description: string | null;
}

/** A printer a connector wants to exist (created when missing, never changed when it exists). */
export interface PrinterToEnsure {
  name: string;
  connection: string;
  description?: string;
  location?: string;
}

/** The task status a job operation of a hook is for (`PrintPort.hold`). */
export interface TaskGuard {
  tid: string;
  /** The statuses a hook acts for (pause, resume, abort). */
  status: 'paused' | 'processing' | 'aborted';
}

/** What `hold`, `release` and `cancel` did to one job. */
export type PrintJobChange = 'changed' | 'unchanged' | 'in-delivery' | 'final' | 'gone';

/**
 * The print services as a task connector may use them
 * (`src/runtime/print-port.ts`). Given only to connector types that list
 * `print` in `ConnectorType.ports`.
 *
 * - `submitItem` is idempotent per task item and run: the same item of the
 *   same run never gets two jobs, even when a worker dies between the
 *   submission and its report (a unique key on the job's task reference,
 *   migration 021); a job of an earlier run that is not final, or that
 *   printed, is taken over by the new run instead of printing again. The
 *   document is streamed, never held whole; the job's `fileName` is the
 *   document's name. Refusals (document not readable by the task's
 *   principal, unknown printer or flow) are `AppError`s with a 4xx status.
 * - Every state change of a job with a task reference reaches the item
 *   through the `print.task-report` job, written by the job's own change
 *   (a trigger of migration 021): the connector reports nothing after the
 *   submission.
 */
export interface PrintPort {
  submitItem(s: PrintItemSubmission): Promise<PrintJobView>;
  /** The task's jobs (the latest per item), for the action hooks. */
  jobsOfTask(tid: string): Promise<PrintJobView[]>;
  /**
   * Holds a waiting job (the print API's pause); a job being delivered cannot be held.
   * With `whileTask`, only while that task is in that status, checked in the
   * job's own transaction under the task row's lock (else `unchanged`): a
   * hook that read the task before a later action cannot act after it.
   */
  hold(id: string, by: string, whileTask?: TaskGuard): Promise<PrintJobChange>;
  /** Releases a held job (the print API's resume); `whileTask` as for `hold`. */
  release(id: string, by: string, whileTask?: TaskGuard): Promise<PrintJobChange>;
  /** Cancels a job that is not final and not being delivered (one already on its way cannot be taken back); `whileTask` as for `hold`. */
  cancel(id: string, by: string, whileTask?: TaskGuard): Promise<PrintJobChange>;
  printer(name: string): Promise<PrinterView | undefined>;
  /** Creates the printer (as the system user `by`) unless one of that name exists (an operator's changes are kept); true when created. */
  ensurePrinter(p: PrinterToEnsure, by: string): Promise<boolean>;
}

/** Ports a connector type asks for by name (`ConnectorType.ports`); it gets those and no others at creation. */
export interface ServicePorts {
  print: PrintPort;
}
