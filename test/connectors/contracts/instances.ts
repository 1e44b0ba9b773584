import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BlobStore } from '../../../src/blobs/blob-store.js';
import type { Connector, FacetName, IntakePorts, PrintPort, WorkPort } from '../../../src/connectors/connector.js';
import { intakeFileStore } from '../../../src/connectors/lifecycle/intake-file-store.js';
import { stateStore } from '../../../src/connectors/lifecycle/state-store.js';
import { outboxPort } from '../../../src/connectors/ports.js';
import { createOutbox } from '../../../src/outbox/outbox.js';
import { CONNECTOR_TYPES } from '../../../src/connectors/registry.js';
import { createLogger } from '../../../src/logging/logger.js';
import type { Database } from '../../../src/storage/driver/database.js';
import { openPostgres } from '../../../src/storage/driver/postgres.js';
import { migrate } from '../../../src/storage/migrate.js';
import { dropSchema } from '../../helpers/databases.js';
import { TEST_DATABASE_URL, uniqueName } from '../../helpers/env.js';

/** One connector instance built from a type's example options, in a data directory of its own. */
export interface ExampleInstance {
  /** `<type> <options as JSON>`, for test names. */
  label: string;
  connector: Connector;
  dataDir: string;
}

/**
 * Every example of every registered connector type, built as the registry
 * would build it. The facet suites pick the instances that have their facet,
 * so a new type (or a new facet on an old one) is tested without editing them.
 */
export async function exampleInstances(facet: FacetName): Promise<{ instances: ExampleInstance[]; cleanup(): Promise<void> }> {
  const instances: ExampleInstance[] = [];
  for (const type of CONNECTOR_TYPES) {
    for (const options of type.examples) {
      const dataDir = await mkdtemp(path.join(os.tmpdir(), `wcr-contract-${type.type}-`));
      const blobs = new BlobStore(path.join(dataDir, 'blobs'));
      await blobs.init();
      const sid = uniqueName('c').slice(0, 40);
      const connector = await type.create({ sid, config: { type: type.type, enabled: true, options }, dataDir, blobs, log: createLogger('silent'), ports: { print: memoryPrintPort() } });
      if (connector[facet]) instances.push({ label: `${type.type} ${JSON.stringify(options)}`, connector, dataDir });
      else await rm(dataDir, { recursive: true, force: true });
    }
  }
  return {
    instances,
    cleanup: async () => {
      for (const i of instances) await rm(i.dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * The print port of the contract suites: no print services exist there, so
 * jobs are kept in memory (one per item and run, as the runtime's port
 * keeps them); the print connector's own tests use the runtime's port
 * (test/connectors/print/).
 */
function memoryPrintPort(): PrintPort {
  const jobs = new Map<string, { id: string; status: string; printer: string }>();
  const printers = new Set<string>();
  const find = (id: string) => [...jobs.values()].find((j) => j.id === id);
  const change = async (id: string, from: string[], to: string) => {
    const j = find(id);
    if (!j) return 'gone' as const;
    if (!from.includes(j.status)) return 'unchanged' as const;
    j.status = to;
    return 'changed' as const;
  };
  return {
    async submitItem(s) {
      const key = `${s.tid}/${s.item}`;
      let j = jobs.get(key);
      if (!j) jobs.set(key, (j = { id: String(jobs.size + 1), status: 'waitprocessing', printer: s.printer }));
      return { ...j, fileName: null, message: null, href: `/v3/jobs/${j.id}` };
    },
    async jobsOfTask(tid) {
      return [...jobs.entries()].filter(([k]) => k.startsWith(`${tid}/`)).map(([, j]) => ({ ...j, fileName: null, message: null, href: `/v3/jobs/${j.id}` }));
    },
    hold: (id) => change(id, ['waitprocessing'], 'paused'),
    release: (id) => change(id, ['paused'], 'waitprocessing'),
    cancel: (id) => change(id, ['waitprocessing', 'paused'], 'canceled'),
    async printer(name) {
      return printers.has(name) ? { name, state: 'idle', description: null } : undefined;
    },
    async ensurePrinter(p) {
      if (printers.has(p.name)) return false;
      printers.add(p.name);
      return true;
    },
  };
}

/** A schema of its own; `ports(sid)` builds what the runtime hands a connector. */
/** The work port of the contract suites: no other services exist there, so any use fails loudly. */
const noWork: WorkPort = {
  storeDocument: () => Promise.reject(new Error('contract suite: no repository service to store into')),
  storedDocument: () => Promise.reject(new Error('contract suite: no repository service')),
  removeDocument: () => Promise.reject(new Error('contract suite: no repository service')),
  createTask: () => Promise.reject(new Error('contract suite: no task service')),
  startTask: () => Promise.reject(new Error('contract suite: no task service')),
  removeTask: () => Promise.reject(new Error('contract suite: no task service')),
};

export async function openContractEnv(): Promise<{ db: Database; ports(sid: string): IntakePorts; close(): Promise<void> }> {
  const schema = uniqueName('contract');
  const db = await openPostgres({ url: TEST_DATABASE_URL, schema, poolSize: 4 });
  await migrate(db);
  const log = createLogger('silent');
  return {
    db,
    // jobs stay in the outbox table (no relay): the suites check what a connector asks for, not Redis
    ports: (sid) => ({
      log, outbox: outboxPort(createOutbox(), db), state: stateStore(db, sid),
      claims: intakeFileStore(db, sid), work: noWork, metrics: { taken: () => {}, failed: () => {} },
      messages: { post: async () => {} },
    }),
    close: async () => {
      await db.close();
      await dropSchema(schema);
    },
  };
}
