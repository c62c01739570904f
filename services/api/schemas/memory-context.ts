import Type from 'typebox';
import {
  memoryContextReplyExample,
  memoryContextRequestExample,
  memorySearchReplyExample,
  memorySearchRequestExample,
} from './examples.js';
import { JsonObject } from './json-object.js';
import { MemoryScopeField } from './memory-scope.js';
import { SessionKey } from './sessions.js';
import { ViewPermissionsFields } from './view-permissions.js';

const StringOrList = Type.Union([Type.Array(Type.String()), Type.String()]);

export function memoryContextBody(maxQuestionChars: number) {
  return Type.Object(
    {
      question: Type.String({ minLength: 1, maxLength: maxQuestionChars, pattern: '\\S' }),
      session_id: Type.Optional(Type.String({ format: 'uuid' })),
      session_key: Type.Optional(
        Type.Unsafe<string>({
          ...SessionKey,
          description:
            'Instead of session_id: the live session with this key; none yet gives context without a session (a read creates no session)',
        }),
      ),
      format: Type.Union([Type.Literal('text'), Type.Literal('openai'), Type.Literal('anthropic')], { default: 'text' }),
      max_tokens: Type.Optional(
        Type.Integer({ minimum: 0, maximum: 200_000, description: 'Bound on the context (default MEMORY_MAX_CONTEXT_TOKENS)' }),
      ),
      k: Type.Optional(Type.Integer({ minimum: 0, maximum: 20, description: 'Related memories (default MEMORY_SEMANTIC_SEARCH_K)' })),
      memory_scope: Type.Optional(MemoryScopeField),
      vdp_database_names: Type.Optional(StringOrList),
      vdp_tag_names: Type.Optional(
        Type.Union([Type.Array(Type.String()), Type.String()], { description: 'Only turns whose recorded tags lie within these' }),
      ),
    },
    { examples: [memoryContextRequestExample] },
  );
}

const Tokens = Type.Object({
  summary: Type.Integer(),
  slots: Type.Integer(),
  history: Type.Integer(),
  memories: Type.Integer(),
  question: Type.Integer(),
  total: Type.Integer({ description: 'context_text plus messages; at most max_tokens' }),
});

const Memory = Type.Object({
  session_id: Type.String({ format: 'uuid' }),
  turn_number: Type.Integer(),
  question: Type.String(),
  answer: Type.String(),
  sql_query: Type.Union([Type.String(), Type.Null()]),
  tables_used: Type.Array(Type.String()),
  created_at: Type.String({ format: 'date-time' }),
  similarity: Type.Number(),
});

export const MemoryContextReply = Type.Object(
  {
    session_id: Type.Union([Type.String({ format: 'uuid' }), Type.Null()]),
    expires_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    format: Type.String(),
    question: Type.String(),
    context_text: Type.String({ description: 'The memory block (text: everything; openai/anthropic: all but the history messages)' }),
    augmented_question: Type.String({ description: 'context_text followed by the question; the question alone when there is no context' }),
    messages: Type.Array(Type.Unknown(), { description: 'openai/anthropic: the history, ready to prepend; empty for text' }),
    history_turns: Type.Array(Type.Integer(), { description: 'Turn numbers in the history, oldest first' }),
    summary: Type.Union([Type.String(), Type.Null()]),
    slots: JsonObject(),
    memories: Type.Array(Memory),
    tokens: Tokens,
    truncated: Type.Boolean({ description: 'Something did not fit in max_tokens' }),
    ...ViewPermissionsFields,
    warnings: Type.Array(Type.String()),
  },
  { examples: [memoryContextReplyExample] },
);

export const MemorySearchBody = Type.Object(
  {
    query: Type.String({ minLength: 1, maxLength: 4000, pattern: '\\S' }),
    k: Type.Integer({ minimum: 1, maximum: 50, default: 5 }),
    session_id: Type.Optional(Type.String({ format: 'uuid' })),
    vdp_database_names: Type.Optional(StringOrList),
    vdp_tag_names: Type.Optional(
      Type.Union([Type.Array(Type.String()), Type.String()], { description: 'Only turns whose recorded tags lie within these' }),
    ),
    min_similarity: Type.Optional(
      Type.Number({
        minimum: -1,
        maximum: 1,
        description: 'A floor on the cosine similarity; a turn that matches the query lexically passes it',
      }),
    ),
  },
  { examples: [memorySearchRequestExample] },
);

export const MemorySearchReply = Type.Object(
  {
    ...ViewPermissionsFields,
    results: Type.Array(
      Type.Object({
        session_id: Type.String({ format: 'uuid' }),
        session_name: Type.String(),
        turn_number: Type.Integer(),
        created_at: Type.String({ format: 'date-time' }),
        status: Type.String(),
        question: Type.String(),
        answer: Type.String(),
        sql_query: Type.Union([Type.String(), Type.Null()]),
        tables_used: Type.Array(Type.String()),
        vdp_database_names: Type.Array(Type.String()),
        feedback_rating: Type.Union([Type.Literal('up'), Type.Literal('down'), Type.Null()], {
          description: "The turn's latest rating (POST /sessions/{id}/turns/{n}/feedback)",
        }),
        similarity: Type.Number({
          description: 'Cosine similarity, 1 = identical (results are ordered by the fused rank, so it need not decrease)',
        }),
      }),
    ),
  },
  { examples: [memorySearchReplyExample] },
);
