#!/usr/bin/env node
import { wcrProgram } from '../cli/program.js';

// `wcr`: the operator CLI (src/cli/). An error is one line on stderr and exit 1 (a usage error: commander's 1 as well).
try {
  await wcrProgram().parseAsync(process.argv);
} catch (err) {
  process.stderr.write(`wcr: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
