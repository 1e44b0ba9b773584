import { createReadStream, createWriteStream } from 'node:fs';
import { rename, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebStream } from 'node:stream/web';
import { InvalidArgumentError, type Command } from 'commander';
import { contextOf } from './context.js';
import { print, fields, progressBar } from './output.js';

/** The list formats by name: the media type the API takes and gives (src/formats/). */
const FORMATS: Readonly<Record<string, string>> = { json: 'application/json', csv: 'text/csv', rlist: 'application/rli' };
const BY_EXTENSION: Readonly<Record<string, string>> = { '.json': 'json', '.csv': 'csv', '.rli': 'rlist', '.rlist': 'rlist' };

const format = (value: string): string => {
  if (!Object.hasOwn(FORMATS, value)) throw new InvalidArgumentError(`one of ${Object.keys(FORMATS).join(', ')}`);
  return value;
};

interface List {
  lid: string;
  name?: string | null;
  count?: number;
  [k: string]: unknown;
}

/** `wcr lists import|export`: per-user lists, streamed both ways (never held whole). */
export function listCommands(program: Command): void {
  const lists = program.command('lists').description('per-user lists: import, export (JSON, CSV, RList)');

  lists.command('import')
    .description('import a list file as a new list (streamed; a bar of bytes sent)')
    .argument('<file>', 'a .csv, .json or .rli file')
    .option('--format <format>', 'json, csv or rlist (default: by the file\'s extension)', format)
    .action(async (file: string, o: { format?: string }, cmd: Command) => {
      const { api, out } = contextOf(cmd);
      const name = o.format ?? BY_EXTENSION[path.extname(file).toLowerCase()];
      if (!name) throw new InvalidArgumentError(`cannot tell the format of ${file} from its extension: give --format json|csv|rlist`);
      const size = (await stat(file)).size;
      const bar = progressBar(out, 'import');
      let sent = 0;
      const counted = new Transform({
        transform(chunk: Buffer, _enc, done) {
          sent += chunk.length;
          bar.update(sent, Math.max(size, 1), 'bytes');
          done(null, chunk);
        },
      });
      try {
        const input = createReadStream(file);
        input.on('error', (err) => counted.destroy(err)); // a read error ends the upload (and the request) with it
        const source = input.pipe(counted);
        const list = await api.json<List>('POST', '/v1/lists', { stream: source, contentType: FORMATS[name] });
        bar.update(size, Math.max(size, 1), 'imported');
        bar.stop();
        print(out, list, () => fields([['lid', list.lid], ['name', list.name], ['items', list.count]]));
      } finally {
        bar.stop();
      }
    });

  lists.command('export')
    .description('write a list with its items to stdout or a file (streamed)')
    .argument('<lid>', 'the list id')
    .option('--format <format>', 'json, csv or rlist', format, 'json')
    .option('-o, --output <file>', 'write here instead of stdout')
    .action(async (lid: string, o: { format: string; output?: string }, cmd: Command) => {
      const { api } = contextOf(cmd);
      const res = await api.request('GET', `/v1/lists/${encodeURIComponent(lid)}${o.format === 'json' ? '?embed=items' : ''}`, { accept: FORMATS[o.format] });
      const body = Readable.fromWeb(res.body! as WebStream);
      // to a file: written whole under a temporary name, then renamed, so a reader never sees half of it
      if (o.output) {
        const tmp = `${o.output}.part-${process.pid}`;
        await pipeline(body, createWriteStream(tmp));
        await rename(tmp, o.output);
      } else {
        await pipeline(body, process.stdout, { end: false });
      }
    });
}
