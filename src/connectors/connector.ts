import type { BlobStore } from '../blobs/blob-store.js';
import type { Logger } from '../logging/logger.js';
import type { ServiceConfig } from '../config/schema.js';
import type { FunctionsFacet } from './facets/functions.js';
import type { IntakeFacet } from './facets/intake.js';
import type { RepositoryFacet } from './facets/repository.js';
import type { TasksFacet } from './facets/tasks.js';
import type { ServicePorts } from './ports.js';

export * from './facets/repository.js';
export type { ConnectorPorts, ConnectorStateStore, OutboxPort, StateEntry, IntakePorts, IntakeClaimsPort, IntakeClaim, WorkPort } from './ports.js';
export type { PrintPort, PrintJobView, PrintItemSubmission, PrinterView, PrinterToEnsure, PrintJobChange, ServicePorts } from './ports.js';
export type { IntakeFacet } from './facets/intake.js';
export type { TasksFacet, TaskAction, TaskItem, TaskItemContext, ItemReport, ItemReporter, ItemOutcome, ItemEffect, StateEffect } from './facets/tasks.js';
export type { FunctionsFacet, FunctionDescriptor, FunctionParameter, FunctionParams, FunctionContext } from './facets/functions.js';

/** What a connector type may use while it builds an instance (validation and set-up only; no database). */
export interface ConnectorContext {
  sid: string;
  config: ServiceConfig;
  dataDir: string;
  blobs: BlobStore;
  log: Logger;
  /** How the runtime fetches imports (`commands.importAllowPrivate`); absent: public addresses only. */
  imports?: { allowPrivate: boolean };
  /**
   * The ports the type asked for (`ConnectorType.ports`), usable once the
   * runtime is built (from the first `prepare`, `runItem`, hook or function
   * call on; not while `create` runs).
   */
  ports?: Partial<ServicePorts>;
}

/**
 * Single-instance: the connector's running facets (intake) run in one worker
 * process at a time, the one holding the service's lease in PostgreSQL; the
 * others wait and take over when the holder stops renewing (it died).
 */
export interface SingleInstance {
  /** How long a lease lasts unless renewed (renewed every third of it). */
  leaseTtlMs: number;
}

/** Lease length when a connector asks for single-instance without saying more. */
export const DEFAULT_LEASE_TTL_MS = 10_000;

/**
 * A configured instance of a connector type: one `{sid}`. What it can do is
 * the facets it has, nothing else; `GET /v1/services` shows them and the API
 * answers 404 for the rest. A facet with a life cycle (`intake`) is started by
 * the registry in worker processes, with narrow ports (`ports.ts`).
 */
export interface Connector {
  readonly sid: string;
  readonly type: string;
  /** Document repository (entries, content, commands). */
  readonly repository?: RepositoryFacet;
  /** Actions on tasks, per input item. */
  readonly tasks?: TasksFacet;
  /** A long-running watcher. */
  readonly intake?: IntakeFacet;
  /** Synchronous service functions. */
  readonly functions?: FunctionsFacet;
  /** Present: the running facets run in one process at a time. */
  readonly singleInstance?: SingleInstance;
  /** Other services this one works on, checked when the services are built (`option` names the option, for the error). */
  readonly uses?: readonly { sid: string; facet: FacetName; option: string }[];
  /**
   * Runs once the runtime is built, in every process, before requests are
   * served (the print connector ensures its configured printers). Idempotent:
   * several processes may run it at once. A rejection stops the start.
   */
  prepare?(): Promise<void>;
}

/** A connector type, registered once in `registry.ts`. */
export interface ConnectorType {
  readonly type: string;
  readonly description: string;
  /**
   * Option sets that work in any empty data directory. Docs show them, and the
   * per-facet contract suites build one instance from each and test every
   * facet it has: a new type is tested by listing it in `CONNECTOR_TYPES`.
   */
  readonly examples: readonly Record<string, unknown>[];
  /** Ports of the runtime's services the type needs (`ConnectorContext.ports`); it gets no others. */
  readonly ports?: readonly (keyof ServicePorts)[];
  /** Validates `options` and builds the instance; throws with a message naming the bad option. */
  create(ctx: ConnectorContext): Promise<Connector> | Connector;
}

/** The facet names (the optional members of `Connector`), as `GET /v1/services` reports them. */
export type FacetName = 'repository' | 'tasks' | 'intake' | 'functions';
