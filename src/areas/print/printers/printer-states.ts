/**
 * Printer states as data (DESIGN.md section 7). A printer is administratively
 * `active` or `paused` (the `paused` column); the operations below move it
 * between them and answer 412 INVALID_STATE from any other state. Its runtime
 * status (idle, printing, paused, error, disabled) is derived from this, the
 * `enabled` flag, the job in flight and the last device error: `runtimeStatus`.
 */
export const PRINTER_STATES = ['active', 'paused'] as const;
export type PrinterState = (typeof PRINTER_STATES)[number];

export const PRINTER_OPERATIONS = ['pause', 'resume'] as const;
export type PrinterOperation = (typeof PRINTER_OPERATIONS)[number];

export const PRINTER_OPERATION_RULES: Readonly<Record<PrinterOperation, { from: readonly PrinterState[]; to: PrinterState }>> = {
  pause: { from: ['active'], to: 'paused' },
  resume: { from: ['paused'], to: 'active' },
};

export const RUNTIME_STATUSES = ['idle', 'printing', 'paused', 'error', 'disabled'] as const;
export type RuntimeStatus = (typeof RUNTIME_STATUSES)[number];

export const printerState = (p: { paused: boolean }): PrinterState => (p.paused ? 'paused' : 'active');
export const printerOperationAllowed = (op: PrinterOperation, from: PrinterState): boolean => PRINTER_OPERATION_RULES[op].from.includes(from);

/** Disabled wins, then paused, then a job in flight, then a device error. */
export function runtimeStatus(p: { enabled: boolean; paused: boolean; error: unknown }, printing: boolean): RuntimeStatus {
  if (!p.enabled) return 'disabled';
  if (p.paused) return 'paused';
  if (printing) return 'printing';
  if (p.error) return 'error';
  return 'idle';
}

/**
 * Redirect rules: not to itself, not to an unknown printer, not into a loop.
 * `redirects` maps each printer to its current redirect target (null = none).
 * Returns the reason the redirect is refused, or undefined when allowed.
 */
export function redirectRefusal(from: string, target: string, exists: boolean, redirects: ReadonlyMap<string, string | null>): string | undefined {
  if (target === from) return 'a printer cannot redirect to itself';
  if (!exists) return `no printer named "${target}"`;
  const seen = new Set([from]);
  for (let at: string | null | undefined = target; at; at = redirects.get(at)) {
    if (seen.has(at)) return `redirecting "${from}" to "${target}" would make a loop`;
    seen.add(at);
  }
  return undefined;
}
