import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import {
  type IdempotencyClaim,
  type IdempotencyDeps,
  IdempotencyInProgressError,
  type IdempotentResponse,
  requestFingerprint,
  runIdempotently,
} from '../../core/idempotency/idempotency.js';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Sends `run()`'s result with `status`, honouring the request's `Idempotency-Key` header when
     * present: a retry of the same request replays the first 2xx response (docs/idempotency.md).
     * With a key, `run` gets the claim to complete in the transaction that stores its turn.
     */
    withIdempotency(
      request: FastifyRequest,
      reply: FastifyReply,
      status: number,
      run: (claim?: IdempotencyClaim) => Promise<unknown>,
    ): Promise<FastifyReply>;
    /** As withIdempotency, but returns the response for the route to send in its own way (a streamed reply). */
    runIdempotent(
      request: FastifyRequest,
      reply: FastifyReply,
      status: number,
      run: (claim?: IdempotencyClaim) => Promise<unknown>,
    ): Promise<IdempotentResponse>;
  }
}

/** A replay of a stored response carries this header (as Stripe and the IETF draft name it). */
export const REPLAYED_HEADER = 'idempotent-replayed';

export default fp(
  async function idempotency(app: FastifyInstance) {
    const { config, db, memory } = app;
    const deps: IdempotencyDeps = {
      db,
      clock: memory.clock,
      log: app.log,
      settings: { ttlMs: config.idempotencyTtlMs, leaseMs: config.idempotencyClaimLeaseMs },
    };

    const runIdempotent: FastifyInstance['runIdempotent'] = async (request, reply, status, run) => {
      const key = request.headers['idempotency-key'];
      if (typeof key !== 'string') return { status, body: await run(), replayed: false };
      const route = `${request.method} ${request.routeOptions.url}`;
      try {
        const response = await runIdempotently(
          { ...deps, log: request.log },
          { identity: request.identity, key, route, fingerprint: requestFingerprint(route, request.params, request.body) },
          status,
          run,
        );
        if (response.replayed) reply.header(REPLAYED_HEADER, 'true');
        return response;
      } catch (err) {
        if (err instanceof IdempotencyInProgressError) reply.header('retry-after', String(err.retryAfterSeconds));
        throw err;
      }
    };
    app.decorate('runIdempotent', runIdempotent);
    app.decorate('withIdempotency', async function withIdempotency(request, reply, status, run) {
      const response = await runIdempotent(request, reply, status, run);
      return reply.status(response.status).send(response.body);
    } satisfies FastifyInstance['withIdempotency']);
  },
  { name: 'idempotency', dependencies: ['problem-errors', 'memory'] },
);
