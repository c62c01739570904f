import Type from 'typebox';
import { JsonObject } from './json-object.js';
import { SessionMemoryScope } from './memory-scope.js';
import { ChainFormatSchema, MessageChain } from './message-chains.js';

const StringOrList = Type.Union([Type.Array(Type.String()), Type.String()]);

export const SessionParams = Type.Object({ id: Type.String({ format: 'uuid', description: 'The session id' }) });

export const SessionKey = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: '\\S',
  description:
    "The client's own key for the conversation, e.g. slack:C024BE91L:1700000000.123 or telegram:123456: the caller's live session " +
    'with this key, created at the first write. Unique per tenant and user. Instead of session_id.',
});

export const Session = Type.Object({
  session_id: Type.String({ format: 'uuid' }),
  session_key: Type.Union([Type.String(), Type.Null()], { description: "The client's key for the session, when it was created by one" }),
  session_name: Type.String(),
  message_count: Type.Integer({ description: 'Stored turns' }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  expires_at: Type.String({ format: 'date-time', description: 'MEMORY_TTL after the last write (sliding) or after creation (absolute)' }),
  is_summarized: Type.Boolean(),
  summary_through_turn: Type.Union([Type.Integer(), Type.Null()]),
  slots: JsonObject({ description: 'Carried-forward context slots, latest value per key' }),
  memory_scope: SessionMemoryScope,
});

export const SessionPage = Type.Object({
  sessions: Type.Array(Session),
  next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last' }),
});

export const SessionListQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  cursor: Type.Optional(Type.String({ maxLength: 200 })),
  key: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Only the live session with this session_key' })),
});

const TurnStatus = Type.Union(
  [
    Type.Literal('ok'),
    Type.Literal('clarification'),
    Type.Literal('failed'),
    Type.Literal('upstream_error'),
    Type.Literal('memory_command'),
    Type.Literal('incomplete'),
  ],
  {
    description:
      'ok: answered with SQL; clarification: answered without SQL; failed: the SQL failed; upstream_error: the answerer failed; ' +
      'memory_command: a command answered from memory; incomplete: a streamed reply whose client went away. Only ok turns steer later SQL.',
  },
);

export const TurnFeedback = Type.Object({
  rating: Type.Union([Type.Literal('up'), Type.Literal('down')]),
  comment: Type.Union([Type.String(), Type.Null()]),
  rated_at: Type.String({ format: 'date-time' }),
});

export const TurnAccounting = Type.Object({
  tokens: Type.Unknown({ description: "The answerer's reported tokens, as it sent them" }),
  memory_retrieval_ms: Type.Union([Type.Number(), Type.Null()]),
  answerer_ms: Type.Union([Type.Number(), Type.Null()]),
  total_ms: Type.Union([Type.Number(), Type.Null()]),
});

export const StoredTurnView = Type.Object({
  turn_number: Type.Integer(),
  created_at: Type.String({ format: 'date-time' }),
  status: TurnStatus,
  question: Type.String(),
  answer: Type.String(),
  sql_query: Type.Union([Type.String(), Type.Null()]),
  query_explanation: Type.Union([Type.String(), Type.Null()]),
  tables_used: Type.Array(Type.String()),
  vdp_database_names: Type.Array(Type.String()),
  execution_result: Type.Unknown(),
  messages_format: Type.Union([ChainFormatSchema, Type.Null()]),
  messages: Type.Union([Type.Array(Type.Unknown()), Type.Null()]),
  context: Type.Union([JsonObject(), Type.Null()]),
  metadata: JsonObject(),
  duplicate_of: Type.Union([Type.Integer(), Type.Null()], {
    description: 'The earlier turn of this session whose question this one nearly repeats',
  }),
  vdp_tag_names: Type.Array(Type.String()),
  feedback: Type.Union([TurnFeedback, Type.Null()], {
    description: 'The latest rating; a down-rated turn steers no later SQL until it is corrected (PATCH clears the rating)',
  }),
  accounting: TurnAccounting,
  in_context_window: Type.Boolean({ description: 'False once MEMORY_MAX_TURNS_PER_SESSION or the summary pushed it out of the context' }),
});

export const SessionWithTurns = Type.Intersect([
  Session,
  Type.Object({ summary: Type.Union([Type.String(), Type.Null()]), turns: Type.Array(StoredTurnView) }),
]);

export const RenameSessionBody = Type.Object(
  {
    session_name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' })),
    memory_scope: Type.Optional(SessionMemoryScope),
  },
  { additionalProperties: false, minProperties: 1 },
);

function turnFields(maxQuestionChars: number) {
  return {
    question: Type.String({ minLength: 1, maxLength: maxQuestionChars, pattern: '\\S' }),
    answer: Type.String({ maxLength: 200_000 }),
    sql_query: Type.Optional(Type.Union([Type.String({ maxLength: 100_000 }), Type.Null()])),
    query_explanation: Type.Optional(Type.Union([Type.String({ maxLength: 20_000 }), Type.Null()])),
    tables_used: Type.Optional(StringOrList),
    vdp_database_names: Type.Optional(StringOrList),
    vdp_tag_names: Type.Optional(StringOrList),
    execution_result: Type.Optional(Type.Unknown({ description: 'Either Denodo form; exported by .../result.csv' })),
    status: Type.Optional(
      Type.Union([Type.Literal('ok'), Type.Literal('clarification'), Type.Literal('failed')], {
        description: 'Default: ok with SQL, clarification without. Only ok turns steer later SQL.',
      }),
    ),
    messages: Type.Optional(MessageChain),
    messages_format: Type.Optional(ChainFormatSchema),
    context: Type.Optional(
      JsonObject({
        description: 'Structured slots carried forward to later context, e.g. {"span": 3.2, "memberType": "joist"}; null removes a slot',
      }),
    ),
    metadata: Type.Optional(JsonObject()),
  };
}

export function turnBody(maxQuestionChars: number) {
  return Type.Object(turnFields(maxQuestionChars));
}

export function newSessionTurnBody(maxQuestionChars: number) {
  return Type.Object({
    ...turnFields(maxQuestionChars),
    session_name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    session_key: Type.Optional(SessionKey),
  });
}

export const StoredTurnReply = Type.Object({
  session: Session,
  turn: Type.Object({
    turn_number: Type.Integer(),
    created_at: Type.String({ format: 'date-time' }),
    duplicate_of: Type.Union([Type.Integer(), Type.Null()]),
  }),
  warnings: Type.Array(Type.String()),
});

export const TurnParams = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The session id' }),
  n: Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'The turn number, as GET /sessions/{id} shows it' }),
});

const TurnView = Type.Omit(StoredTurnView, ['in_context_window']);

export const TurnPatchBody = Type.Object(
  {
    sql_query: Type.Optional(
      Type.Union([Type.String({ maxLength: 100_000 }), Type.Null()], { description: 'The corrected SQL; null removes it' }),
    ),
    answer: Type.Optional(Type.String({ maxLength: 200_000 })),
    status: Type.Optional(
      Type.Union([Type.Literal('ok'), Type.Literal('clarification'), Type.Literal('failed')], {
        description: 'Default: unchanged, or ok when sql_query is set and clarification when it is removed',
      }),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const CorrectedTurnReply = Type.Object({
  session: Session,
  turn: TurnView,
  warnings: Type.Array(Type.String()),
});

export const FeedbackBody = Type.Object(
  {
    rating: Type.Union([Type.Literal('up'), Type.Literal('down')], {
      description: 'down: the turn SQL is no longer offered as history or as a similar query until the turn is corrected',
    }),
    comment: Type.Optional(Type.String({ maxLength: 2000 })),
  },
  { additionalProperties: false },
);

export const FeedbackReply = Type.Object({
  session_id: Type.String({ format: 'uuid' }),
  turn: TurnView,
});
