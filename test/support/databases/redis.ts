import { Redis } from 'ioredis';

/** The real Redis the BullMQ tests use (`.ci/run` starts one when none answers). */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A BullMQ key prefix of this test file's own, so parallel files never see each other's jobs. */
export function uniquePrefix(name: string): string {
  return `mctest-${name}-${process.pid}-${Date.now().toString(36)}`;
}

export function redisClient(): Redis {
  return new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
}

export async function keysUnder(redis: Redis, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return keys;
}

/** Every key under the prefix whose name or any stored value mentions `needle`. */
export async function keysMentioning(redis: Redis, prefix: string, needle: string): Promise<string[]> {
  const hits: string[] = [];
  for (const key of await keysUnder(redis, prefix)) {
    const type = await redis.type(key);
    let content: unknown;
    if (type === 'string') content = await redis.getBuffer(key);
    else if (type === 'hash') content = await redis.hgetall(key);
    else if (type === 'list') content = await redis.lrange(key, 0, -1);
    else if (type === 'set') content = await redis.smembers(key);
    else if (type === 'zset') content = await redis.zrange(key, 0, -1);
    else if (type === 'stream') content = await redis.xrange(key, '-', '+');
    const text = Buffer.isBuffer(content) ? content.toString('latin1') : JSON.stringify(content ?? '');
    if (key.includes(needle) || text.includes(needle)) hits.push(key);
  }
  return hits;
}

export async function deleteKeysUnder(redis: Redis, prefix: string): Promise<void> {
  const keys = await keysUnder(redis, prefix);
  for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
}

/** Polls every `intervalMs` until `check` returns a truthy value (or throws after `timeoutMs`). */
export async function waitFor<T>(
  check: () => Promise<T | undefined | null | false>,
  timeoutMs = 20_000,
  what = 'condition',
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
