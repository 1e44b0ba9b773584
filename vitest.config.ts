import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 3,
    // one process per worker for all its files: each file no longer loads Node, the dependencies and src/ afresh
    // (tests isolate themselves by prefix, schema and directory; none mocks modules or changes globals)
    isolate: false,
  },
});
