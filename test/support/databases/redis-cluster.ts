// A Redis Cluster of three masters on local ports (docs/scaling.md#redis): Debian's redis-server in
// cluster mode, joined with `redis-cli --cluster create`, in a temporary directory, no persistence.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';

const run = promisify(execFile);
/** A node's cluster bus listens on its port + 10000. */
const BUS_OFFSET = 10_000;

export interface RedisCluster {
  /** REDIS_URL for the service: one node; the client finds the others. */
  url: string;
  ports: number[];
  /** The nodes stop answering (SIGSTOP): connections stay open, nothing moves, until resume(). */
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

/** A port that is free, and whose cluster bus port is too. */
async function freeNodePort(): Promise<number> {
  for (;;) {
    const port = await listenAndRelease(0);
    if (port + BUS_OFFSET < 65_536 && (await listenAndRelease(port + BUS_OFFSET).catch(() => 0))) return port;
  }
}

async function listenAndRelease(port: number): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return bound;
}

async function waitUntil(check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`the Redis Cluster did not become ready: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function onNode<T>(port: number, command: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  try {
    await redis.connect();
    return await command(redis);
  } finally {
    redis.disconnect();
  }
}

export async function startRedisCluster(masters = 3): Promise<RedisCluster> {
  const dir = await mkdtemp(path.join(tmpdir(), 'memorychat-redis-cluster-'));
  const ports: number[] = [];
  for (let i = 0; i < masters; i++) ports.push(await freeNodePort());
  const nodes: ChildProcess[] = ports.map((port) =>
    spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        path.join(dir, `nodes-${port}.conf`),
        '--cluster-node-timeout',
        '5000',
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'no',
        '--maxmemory-policy',
        'noeviction',
      ],
      { stdio: 'ignore' },
    ),
  );
  const close = async () => {
    for (const node of nodes) {
      node.kill('SIGCONT');
      node.kill('SIGKILL');
    }
    await rm(dir, { recursive: true, force: true });
  };
  try {
    for (const port of ports) await waitUntil(async () => (await onNode(port, (r) => r.ping())) === 'PONG', `node :${port} answering`);
    await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes']);
    for (const port of ports) {
      await waitUntil(
        async () => (await onNode(port, (r) => r.cluster('INFO'))).includes('cluster_state:ok'),
        `node :${port} cluster_state:ok`,
      );
    }
  } catch (err) {
    await close();
    throw err;
  }
  return {
    url: `redis://127.0.0.1:${ports[0]}`,
    ports,
    pause: () => {
      for (const node of nodes) node.kill('SIGSTOP');
    },
    resume: () => {
      for (const node of nodes) node.kill('SIGCONT');
    },
    close,
  };
}
