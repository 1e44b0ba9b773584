import os from 'node:os';
import { PrintConfinement } from '../../src/connectors/print-backends/confinement.js';
import { PrintDeliveryError } from '../../src/connectors/print-backends/print-backend.js';

/**
 * How a print backend's delivery ended: 'resolved', the PrintDeliveryError's
 * kind ('not-delivered', 'uncertain', …), or a description of any other
 * error (which no expected kind matches, so the test shows it).
 */
export const deliveryKind = async (p: Promise<unknown>): Promise<string> =>
  p.then(() => 'resolved', (e: unknown) => (e instanceof PrintDeliveryError ? e.kind : `not a PrintDeliveryError: ${String(e)}`));

/**
 * The confinement rule for backend tests that build backends themselves:
 * directory printers under the system temp directory (where `tempDir`
 * makes them), no own endpoints, no lists; the built-in address rule holds.
 */
export const testConfinement = new PrintConfinement({ directoryRoots: [os.tmpdir()], allow: [], deny: [], own: [] });
