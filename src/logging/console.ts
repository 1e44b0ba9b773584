import { format } from 'node:util';
import type { Logger } from 'pino';

type ConsoleMethod = 'debug' | 'log' | 'info' | 'warn' | 'error' | 'trace';
const LEVELS: Record<ConsoleMethod, 'debug' | 'info' | 'warn' | 'error'> = {
  debug: 'debug', log: 'info', info: 'info', warn: 'warn', error: 'error', trace: 'debug',
};

/**
 * Sends what libraries print with `console` (pdf-lib warns with
 * `console.warn` about objects it cannot parse, and prints nothing else
 * through a logger of its own) through the process's logger, so stdout holds
 * only JSON lines: `{ "source": "console", "msg": … }` at the matching level.
 * The process's own code logs through pino and never calls `console`. Call
 * once, in the entrypoint; worker threads have their own `console`, kept
 * quiet where they run libraries (the PDF thread sets PDF.js's verbosity to
 * errors only).
 */
export function routeConsoleToLogger(log: Logger): void {
  const out = log.child({ source: 'console' });
  for (const [method, level] of Object.entries(LEVELS) as [ConsoleMethod, (typeof LEVELS)[ConsoleMethod]][]) {
    console[method] = (...args: unknown[]) => out[level](format(...args));
  }
}
