import { main } from './main.js';

// The role comes from ROLE (default all); all.ts, api.ts and worker.ts fix it instead.
await main();
