// Lint runs with TypeScript 6 (typescript-eslint does not support the TypeScript 7 compiler API);
// type checking and the build use TypeScript 7 (`typescript7`).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', fetch: 'readonly', AbortController: 'readonly', AbortSignal: 'readonly', Response: 'readonly', structuredClone: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Only src/config/env.ts reads process.env.' }],
    },
  },
  {
    files: ['src/config/env.ts', 'test/**', 'bench/**', 'vitest.config.ts'],
    rules: { 'no-restricted-properties': 'off' },
  },
  {
    files: ['src/**'],
    ignores: ['src/queue/**'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [
          { name: 'bullmq', message: 'Only src/queue/ imports bullmq.' },
          { name: 'ioredis', message: 'Only src/queue/ talks to Redis.' },
          { name: 'pg', message: 'Only src/storage/driver/ imports the database driver.' },
          { name: '@electric-sql/pglite', message: 'Only src/storage/driver/ imports the database driver.' },
        ],
      }],
    },
  },
  {
    files: ['src/storage/driver/**'],
    rules: { 'no-restricted-imports': 'off' },
  },
  {
    // print backends reach devices only through the confinement rule (print-backends/confinement.ts): its `connect`
    // for network backends, so none can open a connection the rule did not judge (types may still be imported)
    files: ['src/connectors/print-backends/**'],
    ignores: ['src/connectors/print-backends/confinement.ts'],
    rules: {
      'no-restricted-imports': 'off',
      '@typescript-eslint/no-restricted-imports': ['error', {
        paths: ['node:net', 'net', 'node:tls', 'tls', 'node:dns', 'dns', 'node:dns/promises', 'dns/promises', 'node:http', 'http', 'node:https', 'https', 'undici']
          .map((name) => ({ name, allowTypeImports: true, message: 'Print backends connect through PrintConfinement.connect (print-backends/confinement.ts).' }))
          .concat(['bullmq', 'ioredis', 'pg', '@electric-sql/pglite'].map((name) => ({ name, allowTypeImports: false, message: 'Only src/queue/ and src/storage/driver/ import these.' }))),
      }],
    },
  },
);
