import Type from 'typebox';
import { idempotencyKeyHeader } from './idempotency.js';

const StringOrList = Type.Union([Type.String(), Type.Array(Type.String())]);

/** The request: memory options plus any answerQuestion parameter, forwarded as given. */
export function memoryChatBody(maxQuestionChars: number) {
  return Type.Object(
    {
      question: Type.String({ minLength: 1, maxLength: maxQuestionChars, pattern: '\\S', description: "The user's question, as asked" }),
      session_id: Type.Optional(Type.String({ format: 'uuid', description: 'Resume this conversation' })),
      session_name: Type.Optional(
        Type.String({ minLength: 1, maxLength: 200, description: 'Name for a new conversation (default: the first question)' }),
      ),
      use_memory: Type.Optional(
        Type.Boolean({ default: true, description: 'Use conversation memory for this question (the turn is stored either way)' }),
      ),
      max_history_messages: Type.Optional(
        Type.Integer({ minimum: 0, maximum: 50, description: 'Recent turns to include (default MEMORY_MAX_HISTORY_MESSAGES)' }),
      ),
      semantic_search_k: Type.Optional(
        Type.Integer({ minimum: 0, maximum: 20, description: 'Similar past turns to include (default MEMORY_SEMANTIC_SEARCH_K)' }),
      ),
      vdp_database_names: Type.Optional(StringOrList),
      vdp_tag_names: Type.Optional(StringOrList),
      use_views: Type.Optional(Type.String()),
      mode: Type.Optional(Type.String({ description: 'e.g. default, data, metadata' })),
      llm_provider: Type.Optional(Type.String()),
      llm_model: Type.Optional(Type.String()),
      custom_instructions: Type.Optional(Type.String({ maxLength: 20000 })),
      markdown_response: Type.Optional(Type.Boolean()),
      vql_execute_rows_limit: Type.Optional(Type.Integer({ minimum: 0 })),
      llm_response_rows_limit: Type.Optional(Type.Integer({ minimum: 0 })),
      verbose: Type.Optional(Type.Boolean()),
      disclaimer: Type.Optional(Type.Boolean()),
      plot: Type.Optional(Type.Boolean()),
      plot_details: Type.Optional(Type.String()),
    },
    { additionalProperties: true, description: 'Other answerQuestion parameters are forwarded unchanged.' },
  );
}

export const MemoryChatHeaders = Type.Object({
  'x-upstream-authorization': Type.Optional(
    Type.String({ description: 'Sent to the answering backend as Authorization when ANSWER_AUTH=forward' }),
  ),
  'idempotency-key': idempotencyKeyHeader,
});

export const ConversationMetadata = Type.Object({
  conversation_id: Type.String({ format: 'uuid' }),
  session_name: Type.String(),
  message_count: Type.Integer({ description: 'Turns in the conversation' }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  expires_at: Type.String({ format: 'date-time' }),
  is_summarized: Type.Boolean(),
  summary_through_turn: Type.Union([Type.Integer(), Type.Null()], { description: 'The last turn the summary covers' }),
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
    raw_graph: Type.Optional(Type.Unknown()),
    sql_execution_time: Type.Optional(Type.Unknown()),
    vector_store_search_time: Type.Optional(Type.Unknown()),
    llm_time: Type.Optional(Type.Unknown()),
    total_execution_time: Type.Optional(Type.Unknown()),
    conversation_metadata: ConversationMetadata,
    memory_context_used: Type.Object({
      history_messages_count: Type.Integer(),
      similar_queries_count: Type.Integer(),
      context_tokens: Type.Integer(),
      context_truncated: Type.Boolean(),
      augmented_question: Type.String({ description: 'What was sent upstream as the question' }),
      custom_instructions: Type.Optional(Type.String({ description: 'Present when memory went into custom_instructions' })),
    }),
    memory_retrieval_time: Type.Number({ description: 'Seconds' }),
    warnings: Type.Array(Type.String()),
  },
  {
    additionalProperties: true,
    description: 'The answerQuestion reply as the backend sent it (tables_used always a list), plus memory metadata.',
  },
);
