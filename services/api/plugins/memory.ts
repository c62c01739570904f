import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { createMemory, type Memory, type MemoryParts } from '../../core/create-memory.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Conversation memory: every route's way into services/core. */
    memory: Memory;
  }
}

/** Decorates `memory`, made once from the app's config, database, queue and metrics and the given providers. */
export default fp(
  async function memoryPlugin(app: FastifyInstance, parts: Pick<MemoryParts, 'embedder' | 'answerer' | 'llm' | 'clock'>) {
    app.decorate(
      'memory',
      createMemory({
        ...parts,
        config: app.config,
        db: app.db,
        queue: app.queue,
        metrics: app.metrics,
        log: app.log,
        ...(app.accountLinks ? { accountLinks: app.accountLinks } : {}),
      }),
    );
    // The answerer's own connections (the sql answerer's pool, the upstream's keep-alive sockets) close with
    // the app; the database's pool is closed by its owner.
    app.addHook('onClose', async () => parts.answerer.close?.());
  },
  { name: 'memory', dependencies: ['queue', 'metrics', 'account-links'] },
);
