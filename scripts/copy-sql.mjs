// Copies the .sql files under <from> (default src) to the same places under <to>
// (default dist/src): the stores read their statements from .sql files beside
// their compiled modules (src/storage/sql-file.ts), and tsc copies only what it
// compiles. Used by `npm run build` and by the benchmarks' compiled servers.
import { cpSync, statSync } from 'node:fs';

const [from = 'src', to = 'dist/src'] = process.argv.slice(2);
cpSync(from, to, { recursive: true, filter: (file) => file.endsWith('.sql') || statSync(file).isDirectory() });
