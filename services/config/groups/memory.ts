import Type, { type Static } from 'typebox';
import { DURATION_PATTERN, parseDurationMs } from '../duration.js';

/** Memory: what a question is given, and how long turns live. */
export const MemorySchema = Type.Object({
  MEMORY_MAX_QUESTION_CHARS: Type.Integer({ minimum: 1, maximum: 100_000, default: 4000 }),
  MEMORY_MAX_HISTORY_MESSAGES: Type.Integer({ minimum: 0, maximum: 200, default: 10 }),
  MEMORY_SEMANTIC_SEARCH_K: Type.Integer({ minimum: 0, maximum: 50, default: 3 }),
  MEMORY_MIN_SIMILARITY: Type.Number({ minimum: -1, maximum: 1, default: 0.25 }),
  // Up to this many turns a user's memory is searched exactly; past it, approximately when the user
  // holds enough of the index's rows (an IVFFlat index per embedding model, and lexical matches among the
  // newest 1,000 turns; hybrid-rank.ts, ANN_ROW_COST): docs/performance.md.
  MEMORY_EXACT_SEARCH_MAX_TURNS: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 2000 }),
  // Unset: the answer backend's default (config/answerers/): 2000 with an upstream answerer (the Denodo
  // AI SDK sends custom_instructions, and so the memory block, in about four LLM prompts per question:
  // docs/denodo-ai-sdk.md), 4000 otherwise.
  MEMORY_MAX_CONTEXT_TOKENS: Type.Optional(Type.Integer({ minimum: 0, maximum: 200_000 })),
  MEMORY_AUGMENTATION: Type.Union([Type.Literal('instructions'), Type.Literal('inline'), Type.Literal('rewrite')], {
    default: 'instructions',
  }),
  MEMORY_TTL: Type.String({ pattern: DURATION_PATTERN, default: '7d' }),
  MEMORY_TTL_MODE: Type.Union([Type.Literal('sliding'), Type.Literal('absolute')], { default: 'sliding' }),
  // The memory API's window: older turns leave the context but stay stored until a summary covers them.
  MEMORY_MAX_TURNS_PER_SESSION: Type.Integer({ minimum: 1, maximum: 1000, default: 20 }),
  MEMORY_DEDUP_SIMILARITY: Type.Number({ minimum: 0, maximum: 1, default: 0.97 }),
  // "show me the SQL", "/clear"... typed into /memoryChat are answered from memory (docs/memory-api.md).
  MEMORY_COMMANDS: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
  // Turn bodies may carry base64 photos that are replaced before storage, so they get a larger limit.
  MEMORY_TURN_BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, default: 10_485_760 }),
});

export type MemoryVariables = Static<typeof MemorySchema>;

export function deriveMemory(raw: MemoryVariables) {
  return { memoryTtlMs: parseDurationMs(raw.MEMORY_TTL) };
}
