import type { AppConfig } from '../config/schema.js';
import type { BlobStore } from '../blobs/blob-store.js';
import type { Permissions } from '../auth/permissions.js';
import type { Policy } from '../auth/policy.js';
import type { TokenVerifier } from '../auth/token-verifier.js';
import type { DevIssuer } from '../auth/dev-issuer.js';
import type { ConnectorRegistry } from '../connectors/registry.js';
import type { RepositoryService } from '../areas/repository/repository-service.js';
import type { CommandService } from '../areas/commands/command-service.js';
import type { TaskService } from '../areas/tasks/task-service.js';
import type { TaskLists } from '../areas/tasks/task-lists.js';
import type { ActionService } from '../areas/tasks/actions/action-service.js';
import type { ListService } from '../areas/lists/list-service.js';
import type { MessageService } from '../areas/messages/message-service.js';
import type { FunctionService } from '../areas/functions/function-service.js';
import type { PrintJobService } from '../areas/print/jobs/print-job-service.js';
import type { PrinterService } from '../areas/print/printers/printer-service.js';
import type { FlowService } from '../areas/print/flows/flow-service.js';
import type { PrintConfigService } from '../areas/print/config/config-service.js';
import type { PrintStatisticsService } from '../areas/print/statistics/statistics-service.js';
import type { Logger } from '../logging/logger.js';
import type { PrintConfinement } from '../connectors/print-backends/confinement.js';
import type { Metrics } from '../metrics/metrics.js';
import type { JobQueue } from '../queue/job-queue.js';
import type { Outbox } from '../outbox/outbox.js';
import type { OutboxRelay } from '../outbox/relay.js';
import type { Database } from '../storage/driver/database.js';
import type { EventHub } from '../events/event-hub.js';
import type { EventPublisher } from '../events/publisher.js';
import type { PanelService } from '../areas/panels/panel-service.js';
import type { ConfigTreeService } from '../areas/config-tree/config-tree-service.js';
import type { SessionService } from '../areas/sessions/session-service.js';

/** Everything the API and the workers share; built once per process by `buildServices`. */
export interface Services {
  config: AppConfig;
  log: Logger;
  db: Database;
  blobs: BlobStore;
  queue: JobQueue;
  /** Where request paths put background work (in their transaction); never `queue.enqueue`. */
  outbox: Outbox;
  /** Moves outbox rows into the queues; started by every role (`startRuntime`). */
  relay: OutboxRelay;
  metrics: Metrics;
  permissions: Permissions;
  /** Ownership decisions (own/all, owners on create); services go through it. */
  policy: Policy;
  verifier: TokenVerifier;
  devIssuer?: DevIssuer;
  registry: ConnectorRegistry;
  repository: RepositoryService;
  commands: CommandService;
  tasks: TaskService;
  /** A task's input and output lists (through the shared list store). */
  taskLists: TaskLists;
  /** Task actions (start, pause, resume, abort). */
  taskActions: ActionService;
  /** Per-user lists. */
  lists: ListService;
  /** Per-user messages; also the connectors' `MessagePort`. */
  messages: MessageService;
  /** The services' functions (`GET`/`POST /v1/services/{sid}/function`). */
  functions: FunctionService;
  /** The print API's domain operations (`/v3`): jobs, printers, flows, configuration keys, statistics. */
  printJobs: PrintJobService;
  printers: PrinterService;
  printFlows: FlowService;
  printConfig: PrintConfigService;
  printStatistics: PrintStatisticsService;
  /** Where printers may connect (`print.confinement` and this service's own endpoints); every print backend is built with it. */
  printConfinement: PrintConfinement;
  /** This process's fan-out of the event stream to its `GET /v1/events` clients (started by an API role). */
  events: EventHub;
  /** Moves committed events into the Redis stream; started by every role, one publishing at a time. */
  eventPublisher: EventPublisher;
  /** UI panels: the read-only defaults (`/v1/ui`) and each user's own (`/v1/panels`). */
  panels: PanelService;
  /** The configuration tree (`/v1/config`). */
  configTree: ConfigTreeService;
  /** Open sessions per user (`/v1/sessions`); every authenticated request reports to it. */
  sessions: SessionService;
}
