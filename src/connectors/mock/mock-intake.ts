import { hostname } from 'node:os';
import type { IntakeFacet } from '../facets/intake.js';

/** The heartbeat's state key for this process (`heartbeat/<host>:<pid>`). */
const heartbeatKey = () => `heartbeat/${hostname()}:${process.pid}`;

/** What a heartbeat records. */
export interface Heartbeat {
  host: string;
  pid: number;
  /** Beats written by this run. */
  beats: number;
  started: string;
  at: string;
}

/**
 * A simulated intake: while it runs it writes a heartbeat naming its process
 * into the service's state every `intervalMs`. Which process runs a
 * single-instance service, and when it moved, can be read from
 * `connector_state` (the lease tests do exactly that).
 */
export function heartbeatIntake(intervalMs: number): IntakeFacet {
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> = Promise.resolve();
  return {
    description: `heartbeat every ${intervalMs} ms`,
    async start(ports, signal) {
      const key = heartbeatKey();
      const started = new Date().toISOString();
      let beats = 0;
      const write = () => {
        beats += 1;
        const beat: Heartbeat = { host: hostname(), pid: process.pid, beats, started, at: new Date().toISOString() };
        return ports.state.put(key, beat);
      };
      await write(); // the first beat proves the run started (and fails the start when the database is down)
      if (signal.aborted) return;
      timer = setInterval(() => {
        if (signal.aborted) return;
        inFlight = write().catch((err: unknown) => ports.log.warn({ err }, 'heartbeat not written'));
      }, intervalMs);
      signal.addEventListener('abort', () => clearInterval(timer), { once: true });
    },
    async stop() {
      clearInterval(timer);
      await inFlight;
    },
  };
}
