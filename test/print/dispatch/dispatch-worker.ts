/**
 * A worker process running the dispatch engine as the print-jobs area wires
 * it (configuration from CONFIG/DATA_DIR like the real entrypoints), for the
 * kill -9 test. Run: node --import tsx test/print/dispatch/dispatch-worker.ts
 */
import { readEnv } from '../../../src/config/env.js';
import { loadConfig } from '../../../src/config/load.js';
import { AREAS } from '../../../src/areas/index.js';
import { createLogger } from '../../../src/logging/logger.js';
import { startRuntime } from '../../../src/runtime/runtime.js';
import { dispatchArea } from './harness.js';

const config = loadConfig({ env: { ...readEnv(), ROLE: 'worker' } });
const log = createLogger(config.logLevel, { role: 'dispatch-worker' });
await startRuntime(config, { api: false, workers: true, areas: [...AREAS, dispatchArea] }, log);
log.info('dispatch worker running');
