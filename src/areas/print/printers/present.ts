import { runtimeStatus } from './printer-states.js';
import type { PrinterWithRuntime } from './printer-store.js';

const iso = (d: Date | string | null) => (d === null ? null : typeof d === 'string' ? d : d.toISOString());

export function presentRuntime(p: PrinterWithRuntime) {
  return {
    status: runtimeStatus(p, p.current_job !== null),
    currentJob: p.current_job === null ? null : Number(p.current_job),
    lastPrintedJobTime: iso(p.last_printed),
    queuedJobs: Number(p.queued_jobs),
    redirect: p.redirect,
  };
}

/** A printer as the API shows it (DESIGN.md section 7). */
export function presentPrinter(p: PrinterWithRuntime) {
  return {
    name: p.name,
    connection: p.connection,
    description: p.description,
    location: p.location,
    enabled: p.enabled,
    flow: p.flow,
    paused: p.paused,
    redirect: p.redirect,
    message: p.message,
    physical: p.physical,
    error: p.error,
    runtime: presentRuntime(p),
    lastPrinted: iso(p.last_printed),
    created: iso(p.created)!,
    updated: iso(p.updated)!,
  };
}
