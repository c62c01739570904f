import Type from 'typebox';
import { MEMORY_COMMAND_NAMES } from '../../core/commands/recognise.js';
import { literalUnion } from '../../model/literal-union.js';
import { memoryChatReplyExample, memoryChatRequestExample } from './examples.js';
import { idempotencyKeyHeader } from './idempotency.js';
import { MemoryScopeField, SessionMemoryScope } from './memory-scope.js';
import { SessionKey } from './sessions.js';
import { ViewPermissionsFields } from './view-permissions.js';

/** A list or a comma-separated string: sent upstream in the form the answerer's release takes (docs/denodo-ai-sdk.md#releases). */
const StringOrList = Type.Union([Type.String(), Type.Array(Type.String())]);

/** The request: memory options plus any answerQuestion parameter, forwarded as given. */
export function memoryChatBody(maxQuestionChars: number) {
  return Type.Object(
    {
      question: Type.String({ minLength: 1, maxLength: maxQuestionChars, pattern: '\\S', description: "The user's question, as asked" }),
      session_id: Type.Optional(Type.String({ format: 'uuid', description: 'Resume this conversation' })),
      session_key: Type.Optional(SessionKey),
      session_name: Type.Optional(
        Type.String({ minLength: 1, maxLength: 200, description: 'Name for a new conversation (default: the first question)' }),
      ),
      use_memory: Type.Optional(
        Type.Boolean({ default: true, description: 'Use conversation memory for this question (the turn is stored either way)' }),
      ),
      memory_commands: Type.Optional(
        Type.Boolean({
          default: true,
          description:
            'Answer memory commands ("show me the SQL", "export that as CSV", "/clear", "what did I ask?") from memory; false sends every message to the answerer. Off for everyone with MEMORY_COMMANDS=off',
        }),
      ),
      max_history_messages: Type.Optional(
        Type.Integer({ minimum: 0, maximum: 50, description: 'Recent turns to include (default MEMORY_MAX_HISTORY_MESSAGES)' }),
      ),
      semantic_search_k: Type.Optional(
        Type.Integer({ minimum: 0, maximum: 20, description: 'Similar past turns to include (default MEMORY_SEMANTIC_SEARCH_K)' }),
      ),
      memory_scope: Type.Optional(MemoryScopeField),
      vdp_database_names: Type.Optional(StringOrList),
      vdp_tag_names: Type.Optional(StringOrList),
      use_views: Type.Optional(StringOrList),
      mode: Type.Optional(Type.String({ description: 'e.g. default, data, metadata' })),
      llm_provider: Type.Optional(Type.String()),
      llm_model: Type.Optional(Type.String()),
      custom_instructions: Type.Optional(Type.String({ maxLength: 20000 })),
      markdown_response: Type.Optional(Type.Boolean()),
      vql_execute_rows_limit: Type.Optional(Type.Integer({ minimum: 1, description: 'Denodo AI SDK 1.2.1 on: at least 1' })),
      filter_logic: Type.Optional(
        Type.Union([Type.Literal('AND'), Type.Literal('OR')], {
          description:
            'Denodo AI SDK 1.4: how vdp_database_names and vdp_tag_names combine when both are given (the SDK defaults to OR); earlier releases ignore it',
        }),
      ),
      check_ambiguity: Type.Optional(
        Type.Boolean({ description: 'Denodo AI SDK 1.0 on: false skips its clarifying questions (asks_clarification in the reply)' }),
      ),
      enable_query_fixer: Type.Optional(Type.Boolean({ description: 'Denodo AI SDK 1.2.1 on' })),
      enable_query_reviewer: Type.Optional(Type.Boolean({ description: 'Denodo AI SDK 1.2.1 on' })),
      auto_fixing_attempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 5, description: 'Denodo AI SDK 1.4: 1 to 5' })),
      llm_response_rows_limit: Type.Optional(Type.Integer({ minimum: 0 })),
      verbose: Type.Optional(Type.Boolean()),
      disclaimer: Type.Optional(Type.Boolean()),
      plot: Type.Optional(Type.Boolean()),
      plot_details: Type.Optional(Type.String()),
    },
    {
      additionalProperties: true,
      description: 'Other answerQuestion parameters are forwarded unchanged.',
      examples: [memoryChatRequestExample],
    },
  );
}

export const MemoryChatHeaders = Type.Object({
  'x-upstream-authorization': Type.Optional(
    Type.String({ description: 'Sent to the answering backend as Authorization when ANSWER_AUTH=forward' }),
  ),
  'idempotency-key': idempotencyKeyHeader,
  accept: Type.Optional(Type.String({ description: 'text/event-stream: the reply as Server-Sent Events (see the 200 response)' })),
});

export const ConversationMetadata = Type.Object({
  conversation_id: Type.String({ format: 'uuid' }),
  session_key: Type.Union([Type.String(), Type.Null()]),
  session_name: Type.String(),
  message_count: Type.Integer({ description: 'Turns in the conversation' }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  expires_at: Type.String({ format: 'date-time' }),
  is_summarized: Type.Boolean(),
  summary_through_turn: Type.Union([Type.Integer(), Type.Null()], { description: 'The last turn the summary covers' }),
  // Optional: replies stored for an Idempotency-Key before sessions kept a scope replay without it.
  memory_scope: Type.Optional(SessionMemoryScope),
});

export const MemoryChatResponse = Type.Object(
  {
    answer: Type.String(),
    sql_query: Type.Optional(Type.Unknown()),
    query_explanation: Type.Optional(Type.Unknown()),
    tokens: Type.Optional(Type.Unknown()),
    execution_result: Type.Optional(Type.Unknown()),
    related_questions: Type.Optional(Type.Unknown()),
    tables_used: Type.Array(Type.String()),
    is_masked: Type.Optional(
      Type.Boolean({
        description:
          'Denodo AI SDK 1.4: the answer was computed from rows Denodo masked for this user; stored with the turn (metadata.is_masked)',
      }),
    ),
    asks_clarification: Type.Optional(
      Type.Literal(true, {
        description:
          "Present when the answer is a question back to the user (the Denodo AI SDK's ambiguity check, the sql answerer's clarification): show it as a question to reply to. The user's next message is asked as its answer, with its candidate views (tables_used). Absent otherwise",
      }),
    ),
    raw_graph: Type.Optional(Type.Unknown()),
    sql_execution_time: Type.Optional(Type.Unknown()),
    vector_store_search_time: Type.Optional(Type.Unknown()),
    llm_time: Type.Optional(Type.Unknown()),
    total_execution_time: Type.Optional(Type.Unknown()),
    csv_url: Type.Optional(
      Type.String({
        description:
          'Where the stored result rows of this turn (or, for "export that as CSV", of the turn it names) download as CSV; absent when no rows are stored',
      }),
    ),
    conversation_metadata: Type.Union([ConversationMetadata, Type.Null()], {
      description: 'Null when the turn was not stored: the caller is outside the memory rollout and MEMORY_STORE_OUTSIDE_ROLLOUT=false',
    }),
    memory_context_used: Type.Object({
      history_messages_count: Type.Integer(),
      similar_queries_count: Type.Integer(),
      // Optional: replies stored for an Idempotency-Key before these fields existed replay without them.
      history_turns: Type.Optional(
        Type.Array(Type.Integer(), { description: 'Turn numbers of this session in the context, oldest first' }),
      ),
      similar_queries: Type.Optional(
        Type.Array(
          Type.Object({
            session_id: Type.String({ format: 'uuid' }),
            turn_number: Type.Integer(),
            question: Type.String(),
            similarity: Type.Number({ description: 'Cosine similarity, 1 = identical' }),
          }),
          { description: 'Past questions of this user in the context, most similar first' },
        ),
      ),
      verified_pairs_count: Type.Optional(Type.Integer({ description: "The tenant's verified pairs in the memory block" })),
      verified_pairs: Type.Optional(
        Type.Array(
          Type.Object({
            pair_id: Type.String({ format: 'uuid' }),
            question: Type.String(),
            views: Type.Array(Type.String(), { description: "The views the pair's SQL read (of its tables_used), added to use_views" }),
            similarity: Type.Number({ description: 'Cosine similarity, 1 = identical' }),
            verified: Type.Literal(true, { description: "A verified example of the tenant, not the user's own memory" }),
          }),
          { description: "The tenant's verified question/SQL pairs in the memory block, best first (docs/verified-pairs.md)" },
        ),
      ),
      context_tokens: Type.Integer(),
      context_truncated: Type.Boolean(),
      augmented_question: Type.String({ description: 'What was sent upstream as the question' }),
      custom_instructions: Type.Optional(Type.String({ description: 'Present when memory went into custom_instructions' })),
      use_views: Type.Optional(
        Type.String({
          description:
            "What was sent upstream as use_views: the caller's, then the views the memory block's SQL read (of each turn's tables_used, those its SQL names) within vdp_database_names",
        }),
      ),
      ...ViewPermissionsFields,
      applied: Type.Boolean({ description: 'Whether memory was used for this answer' }),
      reason: Type.Union(
        [
          Type.Literal('applied'),
          Type.Literal('use_memory_false'),
          Type.Literal('memory_disabled'),
          Type.Literal('outside_rollout'),
          Type.Literal('memory_unavailable'),
          Type.Literal('memory_command'),
        ],
        {
          description:
            'Why memory was or was not used (MEMORY_ENABLED, MEMORY_ROLLOUT_PERCENT, use_memory, a failed read; a memory command sends nothing upstream)',
        },
      ),
    }),
    memory_retrieval_time: Type.Number({ description: 'Seconds' }),
    duplicate_of: Type.Optional(
      Type.Union([Type.Integer(), Type.Null()], {
        description: 'The earlier turn of this conversation whose question this one nearly repeats',
      }),
    ),
    memory_command: Type.Optional(
      Type.Object(
        {
          name: literalUnion(MEMORY_COMMAND_NAMES),
          found: Type.Optional(Type.Boolean({ description: 'show_sql, export_csv: an earlier turn with SQL was found' })),
          turn_number: Type.Optional(Type.Integer({ description: 'show_sql, export_csv: the turn recalled' })),
          question: Type.Optional(Type.String()),
          sql_query: Type.Optional(Type.String()),
          csv_url: Type.Optional(Type.String({ description: 'export_csv: GET it for the CSV (?fresh=true re-runs the SQL)' })),
          has_stored_result: Type.Optional(Type.Boolean()),
          csv: Type.Optional(Type.String({ description: 'export_csv: the CSV itself when at most 8 KB' })),
          cleared: Type.Optional(Type.Boolean({ description: 'forget: the session was cleared' })),
          memory_scope: Type.Optional(
            Type.Union([Type.Literal('user'), Type.Literal('session')], { description: 'memory_scope: the scope the session now keeps' }),
          ),
          questions: Type.Optional(
            Type.Array(
              Type.Object({
                turn_number: Type.Integer(),
                question: Type.String(),
                sql_query: Type.Union([Type.String(), Type.Null()], { description: 'The SQL that answered it, if any' }),
              }),
              { description: "recall: the session's questions with their SQL" },
            ),
          ),
        },
        {
          additionalProperties: true,
          description: 'Present when the message was a memory command, answered from memory without the answerer',
        },
      ),
    ),
    warnings: Type.Array(Type.String()),
  },
  {
    additionalProperties: true,
    description: 'The answerQuestion reply as the backend sent it (tables_used always a list), plus memory metadata.',
    examples: [memoryChatReplyExample],
  },
);

export const MemoryChatEventStream = Type.String({
  description:
    'With `Accept: text/event-stream`: Server-Sent Events, each `event: <name>` and one `data:` line of JSON. ' +
    '`memory` first: `{conversation_id, memory_context_used, memory_retrieval_time}` (plus `memory_command` for a command); ' +
    '`answer`: `{text}` chunks of the answer as the answerer sends them (one chunk when it does not stream); ' +
    'then either `reply`: the complete JSON reply, exactly as without streaming, or `error`: an RFC 9457 problem document. ' +
    'A replayed Idempotency-Key sends `memory`, one `answer` and `reply` from the stored reply.',
});
