import type { Socket } from 'node:net';

/** Largest single write to a device: the unit in which the idle timer sees progress. */
const PIECE_BYTES = 64 * 1024;

/** A device connection's idle timer (see `watchProgress`). */
export interface ProgressWatch {
  /** Writes like `socket.write` (the same return value), in pieces whose completion counts as progress. */
  write(data: Buffer | string): boolean;
  /** Counts as progress now (the timer starts again). */
  progress(): void;
}

/**
 * The idle timeout of a device connection (`printDispatch.idleTimeoutMs`):
 * `onIdle` runs when nothing progressed for `idleMs`: no piece of a write
 * was taken by the kernel, nothing came from the device. Node's own socket
 * timeout re-arms itself once while a write is pending, so a large write
 * that stalled timed out only after twice the idle time; written through
 * `write`, a large buffer goes in 64 KiB pieces, each completed piece
 * starting the timer again. The timer stops when the socket closes.
 */
export function watchProgress(socket: Socket, idleMs: number, onIdle: () => void): ProgressWatch {
  let timer: NodeJS.Timeout | undefined;
  const progress = () => {
    clearTimeout(timer);
    if (!socket.destroyed) timer = setTimeout(onIdle, idleMs);
  };
  socket.on('data', progress);
  socket.once('close', () => clearTimeout(timer));
  progress();
  return {
    progress,
    write(data) {
      const buf = typeof data === 'string' ? Buffer.from(data) : data;
      let more = true;
      for (let at = 0; at < buf.length; at += PIECE_BYTES) more = socket.write(buf.subarray(at, at + PIECE_BYTES), progress);
      return more;
    },
  };
}
