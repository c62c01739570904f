import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { upstreamAuthorizationOrLinkOf } from '../plugins/account-links.js';
import { problemResponses } from '../schemas/problem.js';
import { SessionParams } from '../schemas/sessions.js';
import { CsvResponse, ResultCsvHeaders, ResultCsvQuery, SqlSearchQuery, TurnRefParams, TurnSql } from '../schemas/sql-recall.js';

const common = { tags: ['sql'], security: [{ bearerAuth: [] }] };

/** "Show SQL for the first question", "export as csv": recalled from memory, no answerer call. */
const sqlRecallRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { sql } = app.memory;

  app.get(
    '/sessions/:id/turns/:ref/sql',
    {
      schema: {
        ...common,
        operationId: 'getTurnSql',
        summary: 'The SQL of a turn: by number, or first / last / previous among turns with SQL',
        params: TurnRefParams,
        response: { 200: TurnSql, ...problemResponses(400, 401, 404) },
      },
    },
    async (request) => sql.byRef(request.identity, request.params.id, request.params.ref),
  );

  app.get(
    '/sessions/:id/turns/:ref/result.csv',
    {
      schema: {
        ...common,
        operationId: 'getTurnResultCsv',
        summary: 'The result of a turn as CSV (stored, or re-run with ?fresh=true)',
        params: TurnRefParams,
        querystring: ResultCsvQuery,
        headers: ResultCsvHeaders,
        response: { 200: CsvResponse, ...problemResponses(400, 401, 404, 409, 502, 503, 504) },
      },
    },
    async (request, reply) => {
      const { id, ref } = request.params;
      const { fresh, limit } = request.query;
      const { turnNumber, csv, truncated } = await sql.resultCsv(
        request.identity,
        id,
        ref,
        fresh ? { limit, upstreamAuthorization: await upstreamAuthorizationOrLinkOf(app, request) } : undefined,
      );
      if (truncated) {
        reply.header('x-result-truncated', 'true').header('x-result-rows-stored', String(truncated.rows_stored));
        if (truncated.rows_total !== null) reply.header('x-result-rows-total', String(truncated.rows_total));
      }
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="session-${id}-turn-${turnNumber}.csv"`)
        .send(csv);
    },
  );

  app.get(
    '/sessions/:id/sql',
    {
      schema: {
        ...common,
        operationId: 'findSqlByKeywords',
        summary: 'The SQL of the latest turn whose question matches the keywords',
        params: SessionParams,
        querystring: SqlSearchQuery,
        response: { 200: TurnSql, ...problemResponses(400, 401, 404) },
      },
    },
    async (request) => sql.byKeywords(request.identity, request.params.id, request.query.q),
  );
};

export default sqlRecallRoutes;
