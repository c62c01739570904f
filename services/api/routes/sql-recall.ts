import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import { recallResultCsv, recallSqlByKeywords, recallSqlByRef } from '../../core/recall/sql-recall.js';
import { createVqlExecutor } from '../../core/recall/vql-execution.js';
import { problemResponses } from '../schemas/problem.js';
import { SessionParams } from '../schemas/sessions.js';
import { CsvResponse, ResultCsvHeaders, ResultCsvQuery, SqlSearchQuery, TurnRefParams, TurnSql } from '../schemas/sql-recall.js';

const common = { tags: ['sql'], security: [{ bearerAuth: [] }] };

/** "Show SQL for the first question", "export as csv": recalled from memory, no answerer call. */
export default async function sqlRecallRoutes(app: FastifyInstance) {
  const execute = createVqlExecutor(app.config);

  app.get(
    '/sessions/:id/turns/:ref/sql',
    {
      schema: {
        ...common,
        summary: 'The SQL of a turn: by number, or first / last / previous among turns with SQL',
        params: TurnRefParams,
        response: { 200: TurnSql, ...problemResponses(400, 401, 404) },
      },
    },
    async (request) => {
      const { id, ref } = request.params as Static<typeof TurnRefParams>;
      return recallSqlByRef(app.memoryApiDeps, request.identity, id, ref);
    },
  );

  app.get(
    '/sessions/:id/turns/:ref/result.csv',
    {
      schema: {
        ...common,
        summary: 'The result of a turn as CSV (stored, or re-run with ?fresh=true)',
        params: TurnRefParams,
        querystring: ResultCsvQuery,
        headers: ResultCsvHeaders,
        response: { 200: CsvResponse, ...problemResponses(400, 401, 404, 502, 503, 504) },
      },
    },
    async (request, reply) => {
      const { id, ref } = request.params as Static<typeof TurnRefParams>;
      const query = request.query as Static<typeof ResultCsvQuery>;
      const upstreamAuthorization = request.headers['x-upstream-authorization'] as string | undefined;
      const { turnNumber, csv } = await recallResultCsv(
        app.memoryApiDeps,
        request.identity,
        id,
        ref,
        query.fresh ? (sql) => execute(sql, { limit: query.limit, upstreamAuthorization }) : undefined,
      );
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
        summary: 'The SQL of the latest turn whose question matches the keywords',
        params: SessionParams,
        querystring: SqlSearchQuery,
        response: { 200: TurnSql, ...problemResponses(400, 401, 404) },
      },
    },
    async (request) => {
      const { id } = request.params as Static<typeof SessionParams>;
      return recallSqlByKeywords(app.memoryApiDeps, request.identity, id, (request.query as Static<typeof SqlSearchQuery>).q);
    },
  );
}
