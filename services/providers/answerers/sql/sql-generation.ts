import type { ChatLlm, StructuredOutput, TokenUsage } from '../../llm/chat-llm.js';

export type Generated =
  | { kind: 'sql'; sql: string; explanation: string; tables: string[] }
  | { kind: 'clarification'; question: string; tables: string[] };

export interface GenerationInput {
  question: string;
  /** The compact schema (schema-prompt.ts). */
  schema: string;
  /** The memory block /memoryChat built for this question (docs/design.md §4): previous questions and their SQL. */
  memory?: string;
  /** The caller's own custom_instructions. */
  callerInstructions?: string;
  /** The statement the database rejected, and why: the LLM corrects it. */
  repair?: { sql: string; error: string };
}

const OUTPUT: StructuredOutput = {
  name: 'answer_with_sql',
  description: 'One read-only PostgreSQL query that answers the question, or one question back to the user when it is ambiguous.',
  schema: {
    type: 'object',
    properties: {
      kind: {
        type: 'string',
        enum: ['sql', 'clarification'],
        description: '"sql" when one query answers the question; "clarification" when it is ambiguous or the schema cannot answer it',
      },
      sql: { type: 'string', description: 'kind "sql": one PostgreSQL SELECT statement, nothing else; kind "clarification": ""' },
      explanation: {
        type: 'string',
        description:
          'kind "sql": what the query computes, in one or two sentences for the user; kind "clarification": the question to ask the user',
      },
      tables: { type: 'array', items: { type: 'string' }, description: 'The schema.table names the query reads' },
    },
    required: ['kind', 'sql', 'explanation', 'tables'],
    additionalProperties: false,
  },
};

const SYSTEM = [
  'You write PostgreSQL for a data-analysis chat. Answer the question with exactly one read-only SELECT statement',
  'over the schema below: use only its tables and columns, qualify tables with their schema, aggregate rather than',
  'list when the question asks for totals, and order the result meaningfully. Never write INSERT, UPDATE, DELETE, DDL',
  'or more than one statement: the database runs the query read-only and refuses anything else.',
  'A follow-up such as "what about 2023?" continues the conversation: take the previous SQL from the conversation',
  'memory and change only what the user changed.',
  'When the question is ambiguous, or the schema cannot answer it, reply with kind "clarification" and one short question.',
].join(' ');

const MAX_OUTPUT_TOKENS = 1500;

/** One structured call: the question, the memory and the schema in; SQL with an explanation, or a clarification, out. */
export async function generateSql(llm: ChatLlm, input: GenerationInput): Promise<{ generated: Generated; usage: TokenUsage }> {
  const { value, usage } = await llm.completeStructured({
    system: `${SYSTEM}\n\nSchema (one table per line):\n${input.schema}`,
    user: userMessage(input),
    maxTokens: MAX_OUTPUT_TOKENS,
    output: OUTPUT,
  });
  return { generated: readGenerated(value), usage };
}

function userMessage(input: GenerationInput): string {
  const parts: string[] = [];
  if (input.callerInstructions?.trim()) parts.push(`Instructions from the application:\n${input.callerInstructions.trim()}`);
  if (input.memory) parts.push(input.memory);
  parts.push(`Question: ${input.question}`);
  if (input.repair) {
    parts.push(
      `Your previous SQL for this question:\n${input.repair.sql}\n\nThe database rejected it: ${input.repair.error}\n` +
        'Write a corrected statement.',
    );
  }
  return parts.join('\n\n');
}

/** The model's object, checked: anything else is an unusable reply, not SQL to run. */
function readGenerated(value: unknown): Generated {
  if (typeof value === 'string') return sqlFromText(value);
  if (!value || typeof value !== 'object') throw new UnusableReplyError('the LLM did not return an object');
  const reply = value as Record<string, unknown>;
  const tables = Array.isArray(reply.tables) ? reply.tables.filter((t): t is string => typeof t === 'string') : [];
  const sql = typeof reply.sql === 'string' ? reply.sql.trim() : '';
  const explanation = typeof reply.explanation === 'string' ? reply.explanation.trim() : '';
  if (reply.kind === 'clarification' || (reply.kind === 'sql' && !sql)) {
    if (!explanation) throw new UnusableReplyError('the LLM asked for a clarification without a question');
    return { kind: 'clarification', question: explanation, tables };
  }
  if (reply.kind !== 'sql') throw new UnusableReplyError('the LLM returned neither SQL nor a clarification');
  return { kind: 'sql', sql, explanation, tables };
}

/** The explanation of SQL that came without one: the rows follow it in the answer. */
const PLAIN_SQL_EXPLANATION = 'The result of the query:';

/**
 * A model that ignores the structured output and answers with the SQL itself, bare or in a fenced
 * block, is taken at its word: the statement still runs read-only, one statement only. Its tables are
 * read from its FROM and JOIN clauses. Any other text is refused, saying what the model must return.
 */
function sqlFromText(text: string): Generated {
  const fenced = /```[a-z]*[ \t]*\n([\s\S]*?)```/i.exec(text)?.[1];
  const candidate = (fenced ?? text).trim().replace(/;\s*$/, '');
  if (!/^(select|with)\b/i.test(candidate)) {
    throw new UnusableReplyError(
      'the LLM answered with text that is neither the JSON object {"kind": "sql" | "clarification", "sql", "explanation", "tables"} ' +
        `nor one SELECT statement (bare or in a \`\`\`sql block): "${text.trim().slice(0, 120)}"`,
    );
  }
  return { kind: 'sql', sql: candidate, explanation: PLAIN_SQL_EXPLANATION, tables: tablesRead(candidate) };
}

/** FROM and JOIN targets, leaving out the FROM inside EXTRACT(… FROM …), SUBSTRING(… FROM …) and the like. */
function tablesRead(sql: string): string[] {
  const tables = new Set<string>();
  for (const match of sql.matchAll(/\b(?:from|join)\s+([a-z_][\w$]*(?:\.[a-z_][\w$]*)?)/gi)) {
    const before = sql.slice(0, match.index);
    if (/\b(?:extract|substring|trim|overlay|position)\s*\([^()]*$/i.test(before)) continue;
    if (match[1]) tables.add(match[1]);
  }
  return [...tables];
}

export class UnusableReplyError extends Error {
  override name = 'UnusableReplyError';
}
