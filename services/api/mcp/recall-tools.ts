import Type from 'typebox';
import { MemorySearchBody } from '../schemas/memory-context.js';
import { TurnRefParams } from '../schemas/sql-recall.js';
import { type McpTool, tagged } from './mcp-tool.js';

const search = MemorySearchBody.properties;
const SimilarArguments = Type.Object({
  query: search.query,
  k: search.k,
  session_id: search.session_id,
  vdp_database_names: search.vdp_database_names,
  vdp_tag_names: search.vdp_tag_names,
});

/** `POST /memory/search` as a tool: the user's past questions nearest the query, with the SQL that answered them. */
export const recallSimilarTool: McpTool<typeof SimilarArguments> = {
  name: 'recall_similar_questions',
  title: 'Recall similar past questions and their SQL',
  operationId: 'searchMemory',
  description:
    "Search the user's own past questions (all conversations, or one session_id) for those nearest a query, by meaning and by " +
    'the tables and columns their SQL used. Each comes with its answer and the SQL that answered it: reuse a proven query ' +
    'instead of asking again. Nothing is stored.',
  arguments: SimilarArguments,
  annotations: { readOnlyHint: true, openWorldHint: false },
  async run(memory, caller, args) {
    const reply = await memory.search(caller.identity, {
      query: args.query,
      k: args.k,
      sessionId: args.session_id,
      vdpDatabaseNames: args.vdp_database_names,
      vdpTagNames: args.vdp_tag_names,
      upstreamAuthorization: caller.upstreamAuthorization,
    });
    const found = reply.results.map((hit, i) =>
      [
        `${i + 1}. "${hit.question}" (session_id ${hit.session_id}, turn ${hit.turn_number}, similarity ${hit.similarity})`,
        tagged('sql_query', hit.sql_query),
      ]
        .filter(Boolean)
        .join('\n'),
    );
    const text = found.length ? `Past questions of this user, most relevant first:\n\n${found.join('\n\n')}` : 'No past question matches.';
    return { text, data: reply };
  },
};

const TurnSqlArguments = Type.Object({
  session_id: TurnRefParams.properties.id,
  ref: TurnRefParams.properties.ref,
});

/** `GET /sessions/{id}/turns/{ref}/sql` as a tool: the SQL a stored turn ran. */
export const turnSqlTool: McpTool<typeof TurnSqlArguments> = {
  name: 'get_turn_sql',
  title: 'Show the SQL of a stored turn',
  operationId: 'getTurnSql',
  description:
    'The SQL that answered one question of a conversation, as stored: by turn number, or first / last / previous (the one ' +
    'before last) among the turns that have SQL. Nothing is sent to the answering backend.',
  arguments: TurnSqlArguments,
  annotations: { readOnlyHint: true, openWorldHint: false },
  async run(memory, caller, args) {
    const turn = await memory.sql.byRef(caller.identity, args.session_id, args.ref);
    const text = [
      `Turn ${turn.turn_number} of session ${turn.session_id}: "${turn.question}"`,
      tagged('sql_query', turn.sql_query),
      tagged('query_explanation', turn.query_explanation),
    ];
    return { text: text.filter(Boolean).join('\n\n'), data: turn };
  },
};
