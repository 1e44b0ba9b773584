import { readEnv } from '../config/env.js';
import { ConfigError, loadConfig } from '../config/load.js';
import { routeConsoleToLogger } from '../logging/console.js';
import { createLogger, type Logger } from '../logging/logger.js';
import { startRuntime, type Runtime, type RuntimeParts } from '../runtime/runtime.js';
import { MigrationEditedError } from '../storage/migrate.js';
import { StartError } from '../errors/start-error.js';
import { localHost, httpOrigin } from '../auth/dev-issuer-url.js';
import { registerServer, writeIssuerRecord } from '../auth/dev-issuer-record.js';

const PARTS: Record<'all' | 'api' | 'worker', RuntimeParts> = {
  all: { api: true, workers: true },
  api: { api: true, workers: false },
  worker: { api: false, workers: true },
};

/**
 * Shared start-up of the entrypoints: validate config, start the parts of the
 * role (the entrypoint's own, else ROLE), stop in order on SIGTERM/SIGINT.
 */
export async function main(forcedRole?: 'all' | 'api' | 'worker'): Promise<void> {
  const env = readEnv();
  let config;
  try {
    config = loadConfig({ env: forcedRole ? { ...env, ROLE: forcedRole } : env });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`configuration error: ${err.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw err;
  }
  const role = config.role;
  const log = createLogger(config.logLevel, { role }, config.logFormat);
  // libraries that print (pdf-lib) must not put plain lines into the log
  routeConsoleToLogger(log);
  const shutdownTimeoutMs = config.server.shutdownTimeoutMs;
  // Signals are handled from the first moment: one that arrives during start-up stops the runtime once it is up.
  let runtime: Runtime | undefined;
  let stopRequested = false;
  const stop = () => {
    const force = setTimeout(() => {
      log.error('shutdown took too long; exiting');
      process.exit(1);
    }, shutdownTimeoutMs);
    force.unref();
    runtime!.stop().then(() => process.exit(0), (err: unknown) => {
      log.error({ err }, 'shutdown failed');
      process.exit(1);
    });
  };
  const onSignal = (signal: string) => {
    log.info({ signal }, 'signal received');
    if (stopRequested) return;
    stopRequested = true;
    if (runtime) stop();
    else {
      // still starting: stop as soon as it is up, but never wait longer than the budget
      setTimeout(() => {
        log.error('start-up did not finish within the shutdown budget; exiting');
        process.exit(1);
      }, shutdownTimeoutMs).unref();
    }
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled rejection'));
  try {
    runtime = await startRuntime(config, PARTS[role], log);
  } catch (err) {
    if (err instanceof StartError) {
      // the operator's to fix (a busy port, a database another process holds, another deployment's Redis prefix): one line
      process.stderr.write(`start failed: ${err.message}\n`);
      process.exit(1);
    }
    if (err instanceof ConfigError) {
      // connector options are validated while the services are built
      process.stderr.write(`configuration error: ${err.message}\n`);
      process.exit(78);
    }
    log.fatal({ err }, 'start failed');
    // an operator's problem to fix, not a crash: said on stderr too, whatever the log level
    if (err instanceof MigrationEditedError) process.stderr.write(`start failed: ${err.message}\n`);
    process.exit(1);
  }
  void runtime.failed.then((err) => {
    process.stderr.write(`stopped: ${err.message}\n`);
    process.exit(1);
  });
  if (stopRequested) stop();
  else await recordDevIssuer(runtime, env.XDG_RUNTIME_DIR, log);
}

/**
 * Tells local tools (`npm run token`) how to mint tokens this server accepts:
 * its issuer, API URL and roles beside its key, and in the per-user registry
 * of running servers (removed again at shutdown) for tools that do not know
 * its DATA_DIR. Best effort: a tool that finds nothing says what to set.
 */
async function recordDevIssuer(runtime: Runtime, runtimeDir: string | undefined, log: Logger): Promise<void> {
  const { devIssuer, config } = runtime.services;
  if (!devIssuer || !runtime.url) return;
  const port = Number(new URL(runtime.url).port);
  const rec = {
    issuer: devIssuer.issuer, api: httpOrigin(localHost(config.server.host), port), dataDir: config.dataDir,
    roles: Object.keys(config.auth.roles), audience: config.auth.audience, pid: process.pid, started: new Date().toISOString(),
  };
  try {
    await writeIssuerRecord(rec);
    const unregister = await registerServer(rec, runtimeDir);
    const stop = runtime.stop;
    runtime.stop = () => unregister().catch(() => undefined).then(stop);
  } catch (err) {
    log.warn({ err }, 'cannot record the development issuer for `npm run token`');
  }
}
