import path from 'node:path';
import type { AppConfig } from '../config/schema.js';
import { BlobStore } from '../blobs/blob-store.js';
import { Permissions } from '../auth/permissions.js';
import { Policy } from '../auth/policy.js';
import { TokenVerifier } from '../auth/token-verifier.js';
import { DevIssuer } from '../auth/dev-issuer.js';
import { devIssuerUrl, httpOrigin } from '../auth/dev-issuer-url.js';
import { CONNECTOR_TYPES, ConnectorRegistry } from '../connectors/registry.js';
import { RepositoryService } from '../areas/repository/repository-service.js';
import { CommandService } from '../areas/commands/command-service.js';
import { TaskService } from '../areas/tasks/task-service.js';
import { TaskLists } from '../areas/tasks/task-lists.js';
import { ActionService } from '../areas/tasks/actions/action-service.js';
import { ListService } from '../areas/lists/list-service.js';
import { MessageService } from '../areas/messages/message-service.js';
import { FunctionService } from '../areas/functions/function-service.js';
import { PrintJobService } from '../areas/print/jobs/print-job-service.js';
import { PrinterService } from '../areas/print/printers/printer-service.js';
import { FlowService } from '../areas/print/flows/flow-service.js';
import { PrintConfigService } from '../areas/print/config/config-service.js';
import { PrintStatisticsService } from '../areas/print/statistics/statistics-service.js';
import type { Logger } from '../logging/logger.js';
import { Metrics } from '../metrics/metrics.js';
import { createJobQueue } from '../queue/job-queue.js';
import { createOutbox } from '../outbox/outbox.js';
import { OutboxRelay } from '../outbox/relay.js';
import { openDatabase } from '../storage/open-database.js';
import type { Services } from './services.js';
import { deploymentId } from './deployment-store.js';
import { confinementRules, PrintConfinement } from '../connectors/print-backends/confinement.js';
import { createEventStream } from '../queue/event-stream.js';
import { EventHub } from '../events/event-hub.js';
import { EventPublisher } from '../events/publisher.js';
import { PanelService } from '../areas/panels/panel-service.js';
import { DefaultPanels } from '../areas/panels/default-panels.js';
import { STREAM_PANEL_EVENTS } from '../areas/panels/panel-events.js';
import { ConfigTreeService } from '../areas/config-tree/config-tree-service.js';
import { SessionService } from '../areas/sessions/session-service.js';
import { printPort } from './print-port.js';

/** How long a start waits for Redis to check the prefix before it goes on without (Redis down). */
const PREFIX_CHECK_WAIT_MS = 5000;

// kept here for the modules that import them from the runtime; the development issuer's tools use them without it
export { devIssuerUrl, httpOrigin };

/**
 * Opens storage and builds every shared service. `port` is the port the API
 * actually listens on (the development issuer's URL contains it).
 */
export async function buildServices(config: AppConfig, log: Logger, port = config.server.port): Promise<Services> {
  const blobs = new BlobStore(path.join(config.dataDir, 'blobs'));
  const swept = await blobs.init();
  if (swept.removed > 0) log.info({ removed: swept.removed, bytes: swept.bytes, dir: 'blobs/tmp' }, 'removed part files left by stopped processes');
  // connector options are checked before anything slow is opened: a bad service fails the start at once;
  // the ports connectors ask for reach the services once they are built below
  let built: Services | undefined;
  const registry = await ConnectorRegistry.create(config, blobs, log, CONNECTOR_TYPES, { print: printPort(() => built) });
  const db = await openDatabase(config);
  let deployment: string;
  try {
    deployment = await deploymentId(db);
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
  const queue = createJobQueue({ url: config.redis.url, prefix: config.redis.prefix, log: log.child({ component: 'queue' }), lockDurationMs: config.queues.lockDurationMs, deployment });
  try {
    // A prefix of another deployment stops the start here. With Redis down this goes on after a
    // while: the queue checks once Redis is there and holds every job back until then (runtime.ts
    // stops the process if the check fails later).
    await Promise.race([queue.bound(), new Promise((resolve) => setTimeout(resolve, PREFIX_CHECK_WAIT_MS).unref())]);
    const metrics = new Metrics(() => queue.depths(), () => queue.connected());
    metrics.partFilesRemoved.inc({ where: 'blobs' }, swept.removed);
    const permissions = new Permissions(config.auth);
    const policy = new Policy(permissions);
    let devIssuer: DevIssuer | undefined;
    let verifier: TokenVerifier;
    const vopts = { audience: config.auth.audience, rolesClaim: config.auth.rolesClaim, clockToleranceSec: config.auth.clockToleranceSec, clientId: config.auth.clientId };
    if (config.auth.issuer) {
      verifier = new TokenVerifier({ issuer: config.auth.issuer, ...vopts }, log.child({ component: 'auth' }));
    } else {
      devIssuer = await DevIssuer.open(config.dataDir, devIssuerUrl(config, port));
      verifier = new TokenVerifier({ issuer: devIssuer.issuer, ...vopts }, log.child({ component: 'auth' }), devIssuer.keySet());
      log.warn({ issuer: devIssuer.issuer }, 'no OIDC_ISSUER set: using the built-in development issuer (mint tokens with `npm run token`)');
    }
    // jobs committed in this process wake its relay at once; other processes hear the NOTIFY
    const relay = new OutboxRelay(db, queue, log.child({ component: 'outbox' }));
    const outbox = createOutbox(relay);
    const repository = new RepositoryService(db, registry, policy, outbox, config.server.maxUploadBytes);
    const commands = new CommandService(db, repository, policy, outbox, config.commands.expirySec);
    const tasks = new TaskService(db, registry, policy, config.tasks.maxPerUser);
    const taskLists = new TaskLists(
      tasks, repository, { allowPrivate: config.commands.importAllowPrivate, timeoutMs: config.commands.importTimeoutMs },
      log.child({ component: 'tasks' }), config.tasks.maxItems ?? config.lists.maxItems,
    );
    const taskActions = new ActionService({
      db, registry, policy, outbox, log: log.child({ component: 'task-actions' }), itemsPerJob: config.queues.taskItemsPerJob,
    });
    const lists = new ListService({
      db, policy, log: log.child({ component: 'lists' }), maxItems: config.lists.maxItems,
      fetch: { timeoutMs: config.commands.importTimeoutMs, allowPrivate: config.commands.importAllowPrivate },
    });
    // message.created is raised by the messages table itself (migration 027)
    const messages = new MessageService({ db, policy, log: log.child({ component: 'messages' }), config: config.messages });
    const functions = new FunctionService({ db, registry, permissions, policy, outbox, log: log.child({ component: 'functions' }) });
    // the confinement rule for every print backend, knowing this service's own endpoints (the API at the port it listens on)
    const printConfinement = new PrintConfinement(confinementRules(config, port));
    const print = { config, log, db, blobs, outbox, policy, printConfinement };
    // the event stream: one command connection for the publisher and the hub, a reading one only where the hub reads (API)
    const eventLog = log.child({ component: 'events' });
    const eventStream = createEventStream({ url: config.redis.url, prefix: config.redis.prefix, log: eventLog });
    const eventPublisher = new EventPublisher(db, eventStream, eventLog, { retentionSec: config.events.retentionSec });
    const events = new EventHub(db, () => eventStream, policy, eventLog, { maxPending: config.events.maxPending });
    built = {
      events, eventPublisher,
      config, log, db, blobs, queue, outbox, relay, metrics, permissions, policy, verifier, devIssuer, registry, repository, commands, tasks, taskLists, taskActions, lists, messages, functions, printConfinement,
      printJobs: new PrintJobService(print), printers: new PrinterService(print), printFlows: new FlowService(print),
      printConfig: new PrintConfigService(print), printStatistics: new PrintStatisticsService(print),
      // panel.create is raised into the event stream in the creating transaction
      panels: new PanelService({ db, policy, tasks, defaults: new DefaultPanels(config.ui.panels), events: STREAM_PANEL_EVENTS }),
      configTree: new ConfigTreeService({ db, policy }),
      sessions: new SessionService({ db, policy, log: log.child({ component: 'sessions' }) }),
    };
    // what the services need before requests come (the print services' printers, created when missing)
    await registry.prepare();
    return built;
  } catch (err) {
    await queue.close().catch(() => {});
    await db.close().catch(() => {});
    throw err;
  }
}
