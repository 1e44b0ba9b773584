// A process that holds a worker's liveness lock and prints its identity (test/worker/liveness.test.ts SIGSTOPs and SIGKILLs it).
import { createLogger } from '../../src/logging/logger.js';
import { openPostgres } from '../../src/storage/driver/postgres.js';
import { holdLiveness } from '../../src/worker/liveness-store.js';

const db = await openPostgres({ url: process.argv[2]!, schema: process.argv[3]!, poolSize: 1 });
const witness = await holdLiveness(db, createLogger('silent'));
process.stdout.write(`identity ${witness!.identity}\n`);
setInterval(() => {}, 60_000);
