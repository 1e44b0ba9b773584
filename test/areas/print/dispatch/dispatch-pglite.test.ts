import { mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestRuntime } from '../../../helpers/runtime.js';
import { TcpSink } from '../../../helpers/tcp-sink.js';
import { addPrinter, logText, startDispatchRuntime, submit, until } from './harness.js';

/** The demo runs on embedded PGlite (role all): the engine's SQL (advisory locks, SET LOCAL, the head scans) works there too. */
let rt: TestRuntime;
let sink: TcpSink;
beforeAll(async () => {
  rt = await startDispatchRuntime({ db: 'pglite' });
  sink = await TcpSink.start();
});
afterAll(async () => {
  await rt?.close();
  await sink?.close();
});

it('on PGlite: a directory printer and a socket printer print their jobs; an unreachable one postpones', async () => {
  const dir = path.join(rt.dataDir, 'out');
  await mkdir(dir);
  await addPrinter(rt, 'folder ü', pathToFileURL(dir).href);
  await addPrinter(rt, 'socket', sink.connection);
  const a = await submit(rt, 'folder ü', 'first', { name: 'a.txt' });
  const b = await submit(rt, 'folder ü', 'second', { name: 'b.txt', priority: 90 });
  const c = await submit(rt, 'socket', 'third');
  await until(rt, [a.id, b.id, c.id], ['processed']);
  const files = (await readdir(dir)).sort();
  expect(files).toEqual([`${a.id}-${a.seq}-a.txt`, `${b.id}-${b.seq}-b.txt`].sort());
  expect(await readFile(path.join(dir, `${b.id}-${b.seq}-b.txt`), 'utf8')).toBe('second');
  expect(sink.received().map(String)).toEqual(['third']);
  expect(await logText(rt, b.id)).toMatch(/delivered: written as /);
  const down = await TcpSink.start();
  await down.down();
  await addPrinter(rt, 'off', down.connection);
  const d = await submit(rt, 'off', 'never');
  const [postponed] = await until(rt, [d.id], ['postponed']);
  expect(postponed!.message).toMatch(/ECONNREFUSED/);
});
