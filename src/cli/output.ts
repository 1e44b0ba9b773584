import cliProgress from 'cli-progress';

/** What every command prints through: tables for people, JSON for scripts (`--json`). */
export interface Output {
  json: boolean;
  /** Progress bars only for a person watching (stderr a terminal, no `--json`). */
  bars: boolean;
}

export function print(out: Output, value: unknown, table: () => string): void {
  process.stdout.write(out.json ? `${JSON.stringify(value, null, 2)}\n` : `${table()}\n`);
}

export type Column<T> = [header: string, cell: (row: T) => unknown];

/** A plain text table: a header row and left-aligned columns, two spaces apart. */
export function table<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  if (rows.length === 0) return '(none)';
  const cells = rows.map((r) => columns.map(([, f]) => text(f(r))));
  const widths = columns.map(([h], i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(columns.map(([h]) => h.toUpperCase())), ...cells.map(line)].join('\n');
}

/** Key and value lines for one object. */
export function fields(pairs: readonly [string, unknown][]): string {
  const w = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${k.padEnd(w)}  ${text(v)}`).join('\n');
}

const text = (v: unknown): string => (v === null || v === undefined ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v));

/** A progress bar on stderr, or nothing when no person watches. */
export interface Bar {
  update(value: number, total: number, status: string): void;
  stop(): void;
}

export function progressBar(out: Output, label: string): Bar {
  if (!out.bars) return { update() {}, stop() {} };
  const bar = new cliProgress.SingleBar({
    format: `${label} [{bar}] {percentage}% {value}/{total} {status}`,
    stream: process.stderr,
    hideCursor: true,
  }, cliProgress.Presets.shades_classic);
  let started = false;
  return {
    update(value, total, status) {
      if (!started) bar.start(total, value, { status });
      started = true;
      bar.setTotal(total);
      bar.update(value, { status });
    },
    stop() {
      if (started) bar.stop();
      started = false;
    },
  };
}
