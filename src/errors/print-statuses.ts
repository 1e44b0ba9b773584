import type { ErrorCode } from './app-error.js';

/**
 * The Print Job Management API's departures from the workflow API's table
 * (codes not listed here answer with the workflow status). The print API
 * answers 412 where an operation does not fit the state of a job or printer
 * (DESIGN.md section 7), where the workflow API answers 409.
 */
export const PRINT_STATUSES: Partial<Record<ErrorCode, number>> = Object.assign(Object.create(null) as Partial<Record<ErrorCode, number>>, {
  INVALID_STATE: 412,
  // redirect to itself, to an unknown printer, into a loop (DESIGN.md section 7)
  INVALID_REDIRECT: 412,
});
