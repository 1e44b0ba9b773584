import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveLogFormat } from '../../src/logging/logger.js';

/**
 * Readable logs (issue 24, item 5): `auto` is pretty on a terminal and JSON
 * on a pipe; `json` and `pretty` are what they say. Run in a real pseudo
 * terminal (util-linux `script`) and on a pipe.
 */
const TSX = path.resolve('node_modules/tsx/dist/loader.mjs');
const LOGGER = path.resolve('src/logging/logger.ts');
const program = (format: string) =>
  `import('${LOGGER}').then(({ createLogger }) => createLogger('info', { role: 'all' }, '${format}').info({ url: 'http://x' }, 'API listening'))`;

function run(format: string, terminal: boolean): string {
  const cmd = [process.execPath, '--import', TSX, '-e', program(format)];
  const res = terminal
    ? spawnSync('script', ['-qec', cmd.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' '), '/dev/null'], { encoding: 'utf8', timeout: 30_000 })
    : spawnSync(cmd[0]!, cmd.slice(1), { encoding: 'utf8', timeout: 30_000 });
  expect(res.status, res.stderr).toBe(0);
  // the terminal's colours and carriage returns are not the point
  // eslint-disable-next-line no-control-regex
  return res.stdout.replace(/\x1b\[[0-9;]*m/g, '').replace(/\r/g, '').trim();
}

describe('log format', () => {
  it('auto: pretty on a terminal, JSON otherwise', () => {
    expect(resolveLogFormat('auto', true)).toBe('pretty');
    expect(resolveLogFormat('auto', false)).toBe('json');
    expect(resolveLogFormat('json', true)).toBe('json');
    expect(resolveLogFormat('pretty', false)).toBe('pretty');
  });

  it('a real terminal gets readable lines, a pipe JSON lines', () => {
    expect(run('auto', true)).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: API listening \{"url":"http:\/\/x"\}$/);
    expect(JSON.parse(run('auto', false))).toMatchObject({ level: 'info', role: 'all', url: 'http://x', msg: 'API listening' });
    expect(run('pretty', false)).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: API listening/);
    expect(JSON.parse(run('json', true))).toMatchObject({ msg: 'API listening' });
  }, 60_000);
});
