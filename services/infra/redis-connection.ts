import { Cluster, Redis, type RedisOptions } from 'ioredis';

/** Redis answers in well under a millisecond; this only bounds a connection that hangs. */
const PRODUCER_COMMAND_TIMEOUT_MS = 1_000;

/**
 * ioredis options from REDIS_URL (redis://[user:password@]host:port[/db], rediss:// for TLS).
 * Workers block on Redis and must retry forever (maxRetriesPerRequest: null, as BullMQ requires);
 * producers fail fast instead, so an API request does not hang while Redis is down: no offline
 * queue (a command fails at once while disconnected), and a command timeout for a connection that
 * stays open but stops answering (a stalled network), which otherwise waits forever.
 */
export function redisOptions(url: string, role: 'worker' | 'producer'): RedisOptions {
  const u = new URL(url);
  const db = Number(u.pathname.replace(/^\//, '') || 0);
  return {
    host: u.hostname,
    port: Number(u.port || 6379),
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    db: Number.isInteger(db) ? db : 0,
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
    ...(role === 'worker'
      ? { maxRetriesPerRequest: null }
      : { maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout: PRODUCER_COMMAND_TIMEOUT_MS }),
    // Reconnect with a capped backoff instead of ioredis' default that grows without bound.
    retryStrategy: (times: number) => Math.min(times * 200, 5_000),
  };
}

/**
 * A connection to REDIS_URL: one Redis, or with REDIS_CLUSTER a Redis Cluster that REDIS_URL is one
 * node of (the client reads the others and the slot map from it, and follows the cluster's
 * redirections). Each node's connection gets the options above, as does the cluster's own: a
 * producer's commands fail at once while the cluster is unreachable, a worker's wait.
 */
export function redisConnection(config: { REDIS_URL: string; REDIS_CLUSTER: boolean }, role: 'worker' | 'producer'): Redis | Cluster {
  const options = redisOptions(config.REDIS_URL, role);
  if (!config.REDIS_CLUSTER) return new Redis(options);
  // A cluster has one database (0); its retry strategy is the cluster's own option.
  const { host, port, db: _db, retryStrategy, ...nodeOptions } = options;
  return new Cluster([{ host: host!, port: port! }], {
    redisOptions: nodeOptions,
    clusterRetryStrategy: retryStrategy,
    enableOfflineQueue: nodeOptions.enableOfflineQueue ?? true,
  });
}
