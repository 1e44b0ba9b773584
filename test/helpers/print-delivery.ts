import { PrintDeliveryError } from '../../src/connectors/print-backends/print-backend.js';

/**
 * How a print backend's delivery ended: 'resolved', the PrintDeliveryError's
 * kind ('not-delivered', 'uncertain', …), or a description of any other
 * error (which no expected kind matches, so the test shows it).
 */
export const deliveryKind = async (p: Promise<unknown>): Promise<string> =>
  p.then(() => 'resolved', (e: unknown) => (e instanceof PrintDeliveryError ? e.kind : `not a PrintDeliveryError: ${String(e)}`));
