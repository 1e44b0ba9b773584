import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { eventually } from '../helpers/runtime.js';

/** A throw-away Redis of our own, started late on a port that was closed until then. */
export interface RedisServer {
  url: string;
  stop(): Promise<void>;
}

export async function startRedisServer(port: number): Promise<RedisServer> {
  const child: ChildProcess = spawn('/usr/bin/redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `redis://127.0.0.1:${port}`;
  await eventually(async () => {
    const r = new Redis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
    r.on('error', () => {});
    try {
      await r.connect();
      return (await r.ping()) === 'PONG' ? true : undefined;
    } finally {
      r.disconnect();
    }
  }, 20_000, 50);
  return {
    url,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
