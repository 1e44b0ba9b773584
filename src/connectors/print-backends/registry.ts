import { AppError } from '../../errors/app-error.js';
import type { PrintBackend, PrintBackendContext, PrintBackendType } from './print-backend.js';
import { directoryBackendType } from './directory/directory-backend.js';
import { socketBackendType } from './socket/socket-backend.js';

/**
 * Every print backend, in one place (a registry of its own: print backends
 * are devices behind printers, not services). IPP and LPR join
 * this list as they are built.
 */
export const PRINT_BACKEND_TYPES: readonly PrintBackendType[] = [directoryBackendType, socketBackendType];

/** The backend for a printer's `connection`: 400 when it does not parse or no backend serves its scheme. */
export function printBackendFor(connection: string, ctx: PrintBackendContext, types = PRINT_BACKEND_TYPES): PrintBackend {
  let url: URL;
  try {
    url = new URL(connection);
  } catch {
    throw new AppError('INVALID_CONNECTION', `"${connection.slice(0, 200)}" is not a URL (e.g. ipp://host/printer, file:///var/spool/out)`);
  }
  const scheme = url.protocol.replace(/:$/, '');
  const type = types.find((t) => t.schemes.includes(scheme));
  if (!type) {
    const known = types.flatMap((t) => t.schemes);
    throw new AppError('UNSUPPORTED_CONNECTION', `no print backend for ${scheme}:// (known: ${known.join(', ')})`, { scheme, known });
  }
  return type.create(url, ctx);
}
