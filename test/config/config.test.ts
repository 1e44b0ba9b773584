import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { readEnv } from '../../src/config/env.js';
import { tempDir } from '../helpers/fs.js';
import { entrypoint } from '../helpers/process.js';

let dir: string;
beforeAll(async () => {
  dir = await tempDir('wcr-config-');
});

describe('configuration', () => {
  it('the shipped default configuration is valid and wires the demo services', () => {
    const c = loadConfig({ env: {} });
    expect(c.server).toMatchObject({ port: 8080, host: '127.0.0.1' });
    expect(c.redis.url).toBe('redis://127.0.0.1:6379');
    expect(c.database.url).toBeUndefined();
    expect(Object.keys(c.auth.roles)).toEqual(['admin', 'operator', 'user', 'readonly']);
    expect(c.services.store?.type).toBe('store');
    expect(c.services.imports).toMatchObject({ type: 'csv', options: { schedule: { everyMs: 30000 }, sources: [{ directory: 'imports', task: { service: 'demo', start: true } }] } });
  });

  it('environment variables override the files', () => {
    const c = loadConfig({ env: readEnv({ PORT: '9090', HOST: '0.0.0.0', DATA_DIR: '/tmp/x', DATABASE_URL: 'postgres://u@h/db', REDIS_URL: 'redis://r:6380', OIDC_ISSUER: 'https://idp.example/realms/a', OIDC_AUDIENCE: 'aud', ROLES_CLAIM: 'realm_access.roles', ROLE: 'api', LOG_LEVEL: 'debug' }) });
    expect(c).toMatchObject({
      server: { port: 9090, host: '0.0.0.0' }, dataDir: '/tmp/x', role: 'api', logLevel: 'debug',
      database: { url: 'postgres://u@h/db' }, redis: { url: 'redis://r:6380' },
      auth: { issuer: 'https://idp.example/realms/a', audience: 'aud', rolesClaim: 'realm_access.roles' },
    });
  });

  it('a bad value stops the start with a message naming the key', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ PORT: 'eighty' }, /server\.port \(PORT\)/],
      [{ PORT: '70000' }, /server\.port \(PORT\)/],
      [{ REDIS_URL: 'http://x' }, /redis\.url \(REDIS_URL\)/],
      [{ DATABASE_URL: 'mysql://x' }, /database\.url \(DATABASE_URL\)/],
      [{ ROLE: 'boss' }, /role \(ROLE\)/],
      [{ OIDC_ISSUER: 'not a url' }, /auth\.issuer \(OIDC_ISSUER\)/],
      [{ ROLE: 'api' }, /embedded database/],
    ];
    for (const [env, message] of cases) {
      expect(() => loadConfig({ env: readEnv(env) }), JSON.stringify(env)).toThrow(message);
    }
  });

  it('CONFIG names an extra file; unknown keys and bad connector options are refused', async () => {
    const extra = path.join(dir, 'extra.yaml');
    await writeFile(extra, 'server:\n  port: 7070\nservices:\n  more:\n    type: store\n');
    expect(loadConfig({ env: { CONFIG: extra } }).services.more?.type).toBe('store');
    await writeFile(extra, 'sever:\n  port: 7070\n');
    expect(() => loadConfig({ env: { CONFIG: extra } })).toThrow(/Unrecognized key.*sever|sever/);
    expect(() => loadConfig({ env: { CONFIG: path.join(dir, 'missing.yaml') } })).toThrow(ConfigError);
    await writeFile(extra, 'services:\n  "bad id!":\n    type: store\n');
    expect(() => loadConfig({ env: { CONFIG: extra } })).toThrow(/services/);
  });

  it('a bad connector type or option also stops the start with 78 and the key', async () => {
    for (const [yaml, message] of [
      ['services:\n  x:\n    type: teleporter\n', /services\.x\.type: unknown connector type "teleporter"/],
      ['services:\n  x:\n    type: filesystem\n    options:\n      root: 42\n', /services\.x\.options: root/],
      ['services:\n  x:\n    type: store\n    options:\n      commands: [teleport]\n', /services\.x\.options: commands/],
    ] as const) {
      const file = path.join(dir, 'bad-service.yaml');
      await writeFile(file, yaml);
      const res = spawnSync(process.execPath, [entrypoint('all')], {
        env: { PATH: process.env.PATH, CONFIG: file, DATA_DIR: path.join(dir, 'data'), PORT: '0' }, encoding: 'utf8', timeout: 60_000,
      });
      expect(res.status, res.stderr).toBe(78);
      expect(res.stderr).toMatch(message);
    }
  }, 120_000);

  it('the entrypoint exits with the message, before touching anything', () => {
    const res = spawnSync(process.execPath, [entrypoint('all')], {
      env: { PATH: process.env.PATH, PORT: 'nope', DATA_DIR: dir }, encoding: 'utf8', timeout: 30_000,
    });
    expect(res.status).toBe(78);
    expect(res.stderr).toMatch(/server\.port \(PORT\)/);
  });
});
