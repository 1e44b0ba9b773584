import type { AppConfig } from '../config/schema.js';
import type { BlobStore } from '../blobs/blob-store.js';
import type { Logger } from '../logging/logger.js';
import { ConfigError } from '../config/load.js';
import { AppError } from '../errors/app-error.js';
import type { Database } from '../storage/driver/database.js';
import type { Connector, ConnectorType } from './connector.js';
import type { IntakeFacet } from './facets/intake.js';
import { IntakeRunner } from './lifecycle/intake-runner.js';
import { newHolderId } from './lifecycle/lease.js';
import { stateStore } from './lifecycle/state-store.js';
import type { IntakeMetricsPort, MessagePort, OutboxPort, ServicePorts, WorkPort } from './ports.js';
import { intakeFileStore } from './lifecycle/intake-file-store.js';
import type { Fence } from './lifecycle/fence.js';
import { leaseName } from './lifecycle/lease.js';
import { storeConnectorType } from './store/store-connector.js';
import { filesystemConnectorType } from './filesystem/filesystem-connector.js';
import { mockConnectorType } from './mock/mock-connector.js';
import { hotfolderConnectorType } from './hotfolder/hotfolder-connector.js';
import { csvConnectorType } from './csv/csv-connector.js';
import { printConnectorType } from './print/print-connector.js';

/** Every connector type, in one place. */
export const CONNECTOR_TYPES: readonly ConnectorType[] = [storeConnectorType, filesystemConnectorType, mockConnectorType, hotfolderConnectorType, csvConnectorType, printConnectorType];

/** A port the registry was not given: every call rejects, naming it. */
function missingPort(name: string): object {
  return new Proxy({}, {
    // not a thenable: only method calls fail
    get: (_target, method) => (method === 'then' ? undefined : () => Promise.reject(new Error(`the ${name} port is not available in this process (${String(method)})`))),
  });
}

/** What the worker side hands the registry to start the running facets with. */
export interface ConnectorRuntime {
  db: Database;
  outbox: OutboxPort;
  /** Work on other services, for intakes (`src/runtime/work-port.ts`). */
  work: WorkPort;
  /** One service's intake metrics. */
  metrics(sid: string): IntakeMetricsPort;
  /** Messages to users (`MessageService`). */
  messages: MessagePort;
}

/** The configured services (`{sid}` -> connector instance). */
export class ConnectorRegistry {
  private runners: IntakeRunner[] = [];
  /** This process as a lease holder (`host:pid:random`). */
  readonly holder = newHolderId();

  private constructor(
    private readonly services: Map<string, { connector: Connector; config: AppConfig['services'][string] }>,
    private readonly log: Logger,
  ) {}

  /**
   * `ports`: the runtime's service ports (`src/runtime/print-port.ts`), each
   * given only to the types that list it in `ConnectorType.ports`; usable
   * once the runtime is built. A type that needs one not given fails here.
   */
  static async create(config: AppConfig, blobs: BlobStore, log: Logger, types = CONNECTOR_TYPES, ports: Partial<ServicePorts> = {}): Promise<ConnectorRegistry> {
    const byType = new Map(types.map((t) => [t.type, t]));
    const services = new Map<string, { connector: Connector; config: AppConfig['services'][string] }>();
    for (const [sid, svc] of Object.entries(config.services)) {
      if (!svc.enabled) continue;
      const type = byType.get(svc.type);
      if (!type) throw new ConfigError(`services.${sid}.type: unknown connector type "${svc.type}" (known: ${[...byType.keys()].join(', ')})`);
      try {
        // a port this registry was not given (one built to check the configuration, not to run it) fails when used
        const asked = Object.fromEntries((type.ports ?? []).map((name) => [name, ports[name] ?? missingPort(name)])) as Partial<ServicePorts>;
        const connector = await type.create({ sid, config: svc, dataDir: config.dataDir, blobs, log: log.child({ sid }),
          imports: { allowPrivate: config.commands.importAllowPrivate }, ports: asked });
        services.set(sid, { connector, config: svc });
      } catch (err) {
        if (err instanceof ConfigError) throw err;
        const issues = (err as { issues?: { path: PropertyKey[]; message: string }[] }).issues;
        const detail = issues ? issues.map((i) => `${i.path.map(String).join('.') || '(options)'}: ${i.message}`).join('; ') : (err as Error).message;
        throw new ConfigError(`services.${sid}.options: ${detail}`);
      }
    }
    for (const [sid, { connector }] of services) {
      for (const use of connector.uses ?? []) {
        const other = services.get(use.sid)?.connector;
        if (!other) throw new ConfigError(`services.${sid}.options.${use.option}: no enabled service "${use.sid}"`);
        if (!other[use.facet]) throw new ConfigError(`services.${sid}.options.${use.option}: service "${use.sid}" (${other.type}) has no ${use.facet} facet`);
      }
    }
    return new ConnectorRegistry(services, log);
  }

  list(): { sid: string; connector: Connector; config: AppConfig['services'][string] }[] {
    return [...this.services.entries()].map(([sid, v]) => ({ sid, ...v }));
  }

  /** The service, or 404. */
  get(sid: string): Connector {
    const svc = this.services.get(sid);
    if (!svc) throw new AppError('SERVICE_NOT_FOUND', `no service "${sid}"`, { sid });
    return svc.connector;
  }

  config(sid: string): AppConfig['services'][string] {
    const svc = this.services.get(sid);
    if (!svc) throw new AppError('SERVICE_NOT_FOUND', `no service "${sid}"`, { sid });
    return svc.config;
  }

  /**
   * Runs every service's `prepare` (the runtime is built); the first failure
   * stops the start. A refusal of what the options ask for (a 4xx `AppError`:
   * a printer connection the confinement forbids) is a configuration error
   * naming the service; anything else (the database) is thrown as it is.
   */
  async prepare(): Promise<void> {
    for (const { connector } of this.services.values()) {
      if (!connector.prepare) continue;
      try {
        await connector.prepare();
      } catch (err) {
        if (err instanceof AppError && err.status < 500) throw new ConfigError(`services.${connector.sid}.options: ${err.message}`);
        throw err;
      }
    }
  }

  /**
   * Starts the facets that run on their own (intake), in worker processes
   * only; single-instance ones wait for their lease in the background, so
   * this returns at once.
   */
  start(rt: ConnectorRuntime): void {
    if (this.runners.length > 0) return;
    for (const { connector } of this.services.values()) {
      if (!connector.intake) continue;
      const log = this.log.child({ sid: connector.sid, component: 'intake' });
      // a single-instance service's shared writes are fenced by the lease its runner holds
      const fence: Fence | undefined = connector.singleInstance && rt.db.kind === 'postgres'
        ? { lease: leaseName(connector.sid), holder: this.holder }
        : undefined;
      const ports = {
        log, outbox: rt.outbox, state: stateStore(rt.db, connector.sid, fence),
        claims: intakeFileStore(rt.db, connector.sid, fence), work: rt.work, metrics: rt.metrics(connector.sid), messages: rt.messages,
      };
      const runner = new IntakeRunner(connector as Connector & { intake: IntakeFacet }, { db: rt.db, ports, holder: this.holder, log });
      runner.start();
      this.runners.push(runner);
    }
  }

  /** Stops the running facets in reverse order (each releases its lease). */
  async stop(): Promise<void> {
    const runners = this.runners.reverse();
    this.runners = [];
    for (const r of runners) await r.stop();
  }
}
