import { pino, type Logger } from 'pino';
import { PinoPretty } from 'pino-pretty';

export type { Logger };

/** `json`: one JSON object per line; `pretty`: readable lines (pino-pretty); `auto`: pretty on a terminal, else JSON. */
export type LogFormat = 'auto' | 'json' | 'pretty';

/**
 * What `auto` means for a stream: a person watching a terminal gets readable
 * lines; a pipe, a file or a container's log collector gets JSON, which log
 * tooling parses.
 */
export function resolveLogFormat(format: LogFormat, isTTY = process.stdout.isTTY === true): 'json' | 'pretty' {
  return format === 'auto' ? (isTTY ? 'pretty' : 'json') : format;
}

/**
 * Structured logs on stdout; one logger per process, children per component.
 * Pretty output is written in this thread (`sync`), not through a transport
 * worker: a process that exits right after a fatal line still prints it, and
 * the lines keep their order with what the process writes to stderr.
 */
export function createLogger(level = 'info', bindings: Record<string, unknown> = {}, format: LogFormat = 'json'): Logger {
  const opts = {
    level,
    base: { pid: process.pid, ...bindings },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
    redact: { paths: ['req.headers.authorization', 'headers.authorization'], censor: '[redacted]' },
  };
  if (resolveLogFormat(format) === 'json') return pino(opts);
  return pino(opts, PinoPretty({
    sync: true,
    colorize: process.stdout.isTTY === true,
    translateTime: 'SYS:HH:MM:ss.l',
    // the process id and role are the same on every line of one process
    ignore: 'pid,hostname,role',
    singleLine: true,
  }));
}
