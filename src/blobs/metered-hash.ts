import { createHash } from 'node:crypto';
import { Transform } from 'node:stream';
import { AppError } from '../errors/app-error.js';

/**
 * A pass-through that hashes (sha256) and counts the bytes streaming by, and
 * fails with 413 past `maxBytes` (0 = unlimited). Every content write (blob
 * store, filesystem repository) goes through one, so nothing is buffered whole.
 */
export function meteredHash(maxBytes: number): { stream: Transform; result(): { size: number; sha256: string } } {
  const hash = createHash('sha256');
  let size = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _enc, done) {
      size += chunk.length;
      if (maxBytes > 0 && size > maxBytes) {
        done(new AppError('PAYLOAD_TOO_LARGE', `content is larger than the limit of ${maxBytes} bytes`));
        return;
      }
      hash.update(chunk);
      done(null, chunk);
    },
  });
  return { stream, result: () => ({ size, sha256: hash.digest('hex') }) };
}
