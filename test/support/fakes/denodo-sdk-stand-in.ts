import type { ServerResponse } from 'node:http';
import { type FakeHttpServer, type RecordedRequest, sendJson, startFakeHttpServer } from './fake-http-server.js';

/**
 * A stand-in for the Denodo AI SDK's `answerQuestion` and `streamAnswerQuestion`, written from the
 * SDK's public source (denodo/denodo-ai-sdk: api/endpoints/answerQuestion.py, streamAnswerQuestion.py,
 * api/utils/sdk_utils.py, api/utils/ai_tools/table_retrieval.py; the 0.5 release where it differs).
 * What it keeps of the SDK, because memorychat depends on it (docs/denodo-ai-sdk.md):
 * - every call needs HTTP Basic or Bearer credentials, and each user sees only the views granted to it;
 * - the request is a pydantic model: strings where it wants strings, 422 with a `loc`/`msg` list otherwise;
 * - views are chosen from `question` alone, plus `use_views`; the SQL writer can use only those views,
 *   and it resolves a follow-up ("What about 2023?") only from an earlier SQL in `custom_instructions`;
 * - its errors: 401 `detail` string, 404/500 `detail: {error, traceback}`;
 * - a DISCLAIMER paragraph appended to every answer unless `disclaimer: false`;
 * - `/streamAnswerQuestion` computes the whole answer, then streams its text only (`text/plain`).
 * The view search is lexical (words of the question against view names, column names and
 * descriptions) instead of embeddings: deterministic, and like a vector search it always returns the
 * `vector_search_k` nearest views, related or not.
 */

export interface SdkView {
  /** `database.view`, as the SDK names views. */
  name: string;
  description?: string;
  columns: { name: string; description?: string }[];
  tags?: string[];
  /** Views joined to this one by a Denodo association (a foreign key): the SDK adds them to the views it found. */
  associations?: string[];
}

export interface SdkUser {
  /** HTTP Basic password; a user without one authenticates with `token` only. */
  password?: string;
  /** Bearer token. */
  token?: string;
  /** The views VDP lets this user read. */
  views: string[];
}

export interface StandInOptions {
  views: SdkView[];
  users: Record<string, SdkUser>;
  /** `0.5`: CUSTOM_INSTRUCTIONS is the field's default, so a request's custom_instructions replace it; newer versions merge. */
  version?: '0.5' | 'newest';
  /** The SDK's CUSTOM_INSTRUCTIONS environment variable. */
  operatorInstructions?: string;
  /**
   * Replaces the SQL writer (the replay's: each turn's gold SQL when its tables are among `views`).
   * Undefined: no SQL, the SDK's "not something I can help you with".
   */
  writeSql?: (question: string, views: string[], instructions: string) => WrittenSql | undefined;
  /**
   * Bearer tokens of an OpenID provider, as VDP's OAuth authentication takes them
   * (jwks-bearer-verifier.ts): the VDP user a valid token names, or undefined (401). Unset: `token`s of `users`.
   */
  verifyBearer?: (token: string) => Promise<string | undefined>;
}

/** The SQL written for a question and the views it reads (the reply's `tables_used`). */
export interface WrittenSql {
  sql: string;
  views: string[];
}

export const SDK_DISCLAIMER =
  "\n\nDISCLAIMER: This response has been generated based on an LLM's interpretation of the data and may not be accurate.";
export const SDK_UNKNOWN_CATEGORY =
  "Sorry, that doesn't seem something I can help you with. Are you sure that question is related to your Denodo instance?";

/** One answered call, as the stand-in saw it. */
export interface SdkCall {
  path: string;
  user: string;
  body: Record<string, unknown>;
  /** The views the SQL writer was given (vector search plus use_views). */
  views: string[];
  /** The views the vector search found for `question` alone. */
  searched: string[];
  /** The custom instructions the SDK's prompts received (the operator's and the request's, per version). */
  instructions: string;
}

export interface DenodoSdkStandIn extends FakeHttpServer {
  answerUrl: string;
  streamUrl: string;
  calls: SdkCall[];
  /** Every later call fails as the SDK does when its LLM provider does (HTTP 500, `detail.error`); undefined to stop. */
  failLlmWith(message: string | undefined): void;
  /** Grants or revokes views of a user, as a VDP administrator would. */
  grant(user: string, views: string[]): void;
}

const STRING_FIELDS = [
  'question',
  'plot_details',
  'embeddings_provider',
  'embeddings_model',
  'vector_store_provider',
  'llm_provider',
  'llm_model',
  'vdp_database_names',
  'vdp_tag_names',
  'use_views',
  'custom_instructions',
] as const;
const BOOL_FIELDS = [
  'plot',
  'allow_external_associations',
  'expand_set_views',
  'markdown_response',
  'disclaimer',
  'verbose',
  'check_ambiguity',
] as const;
const INT_FIELDS = ['vector_search_k', 'vector_search_sample_data_k', 'vector_search_total_limit', 'llm_max_tokens'] as const;

interface FieldProblem {
  type: string;
  loc: (string | number)[];
  msg: string;
  input: unknown;
}

interface SdkRequest {
  question: string;
  vdp_database_names: string;
  vdp_tag_names: string;
  use_views: string;
  custom_instructions?: string;
  expand_set_views: boolean;
  disclaimer: boolean;
  vector_search_k: number;
  vector_search_total_limit: number;
}

const TRUE_WORDS = new Set(['true', '1', 'yes', 'on', 't', 'y']);
const FALSE_WORDS = new Set(['false', '0', 'no', 'off', 'f', 'n']);

/** Pydantic's lax mode, as FastAPI validates the body: a list is never a string. */
function validate(body: unknown): { request?: SdkRequest; problems: FieldProblem[] } {
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    return {
      problems: [{ type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object', input: body }],
    };
  }
  const raw = body as Record<string, unknown>;
  const problems: FieldProblem[] = [];
  const out: Record<string, unknown> = {};
  if (raw.question === undefined) problems.push({ type: 'missing', loc: ['body', 'question'], msg: 'Field required', input: raw });
  for (const field of STRING_FIELDS) {
    const value = raw[field];
    if (value === undefined) continue;
    if (typeof value !== 'string') {
      problems.push({ type: 'string_type', loc: ['body', field], msg: 'Input should be a valid string', input: value });
    } else out[field] = value;
  }
  for (const field of BOOL_FIELDS) {
    const value = raw[field];
    if (value === undefined) continue;
    if (typeof value === 'boolean') out[field] = value;
    else if (value === 0 || value === 1) out[field] = value === 1;
    else if (typeof value === 'string' && (TRUE_WORDS.has(value.toLowerCase()) || FALSE_WORDS.has(value.toLowerCase()))) {
      out[field] = TRUE_WORDS.has(value.toLowerCase());
    } else {
      problems.push({ type: 'bool_parsing', loc: ['body', field], msg: 'Input should be a valid boolean', input: value });
    }
  }
  for (const field of INT_FIELDS) {
    const value = raw[field];
    if (value === undefined) continue;
    const number = typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value;
    if (typeof number === 'number' && Number.isInteger(number)) out[field] = number;
    else problems.push({ type: 'int_parsing', loc: ['body', field], msg: 'Input should be a valid integer', input: value });
  }
  if (problems.length) return { problems };
  return {
    problems,
    request: {
      question: out.question as string,
      vdp_database_names: (out.vdp_database_names as string) ?? '',
      vdp_tag_names: (out.vdp_tag_names as string) ?? '',
      use_views: (out.use_views as string) ?? '',
      custom_instructions: out.custom_instructions as string | undefined,
      expand_set_views: (out.expand_set_views as boolean) ?? true,
      disclaimer: (out.disclaimer as boolean) ?? true,
      vector_search_k: (out.vector_search_k as number) ?? 5,
      vector_search_total_limit: (out.vector_search_total_limit as number) ?? 20,
    },
  };
}

/** FastAPI's HTTPBasic / HTTPBearer: the user the credentials name, or why not. */
function authenticate(header: string | undefined, users: Record<string, SdkUser>): string | { status: number; detail: string } {
  if (!header) return { status: 401, detail: 'Authentication required' };
  const [scheme, value = ''] = header.split(/\s+/, 2);
  if (scheme?.toLowerCase() === 'bearer') {
    const found = Object.entries(users).find(([, u]) => u.token && u.token === value);
    // The SDK asks VDP for the token's permissions; VDP's 401 becomes the SDK's.
    return found ? found[0] : { status: 401, detail: 'Unauthorized' };
  }
  if (scheme?.toLowerCase() === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const name = decoded.slice(0, colon);
    const user = users[name];
    return colon > 0 && user?.password !== undefined && user.password === decoded.slice(colon + 1)
      ? name
      : { status: 401, detail: 'Unauthorized' };
  }
  return { status: 401, detail: 'Authentication required' };
}

const WORD = /[\p{L}\p{N}]+/gu;
function words(text: string): string[] {
  return (text.toLowerCase().match(WORD) ?? []).flatMap((w) => w.split('_')).filter((w) => w.length > 2);
}
/** Plural and singular meet: "sales"/"sale", "employees"/"employee". */
function stem(word: string): string {
  return word.length > 4 && word.endsWith('s') ? word.slice(0, -1) : word;
}

/** The view's own name (not its database's), columns and descriptions. */
function viewWords(view: SdkView): Set<string> {
  const text = [
    view.name.split('.').at(-1) ?? '',
    view.description ?? '',
    ...view.columns.flatMap((c) => [c.name, c.description ?? '']),
  ].join(' ');
  return new Set(words(text).map(stem));
}

/** How many of the question's words the view's name, columns and descriptions hold; the name counts double. */
function score(question: string, view: SdkView, index: Map<string, Set<string>>): number {
  const own = index.get(view.name) ?? new Set();
  const nameWords = new Set(words(view.name.split('.').at(-1) ?? '').map(stem));
  let total = 0;
  for (const w of new Set(words(question).map(stem))) {
    if (own.has(w)) total += nameWords.has(w) ? 2 : 1;
  }
  return total;
}

const databaseOf = (view: string) => view.split('.')[0] ?? '';
const list = (value: string) =>
  value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);

/** The quoted name the SDK's prompts teach the LLM to write: "database"."view". */
const quoted = (view: string) =>
  view
    .split('.')
    .map((p) => `"${p}"`)
    .join('.');

export async function startDenodoSdkStandIn(options: StandInOptions): Promise<DenodoSdkStandIn> {
  const version = options.version ?? 'newest';
  const users = structuredClone(options.users);
  const index = new Map(options.views.map((v) => [v.name, viewWords(v)]));
  const byName = new Map(options.views.map((v) => [v.name, v]));
  const calls: SdkCall[] = [];
  let llmFailure: string | undefined;

  const fail = (res: ServerResponse, status: number, error: string, traceback = '') =>
    sendJson(res, status, { detail: { error, traceback } });

  /** table_retrieval.get_relevant_tables: the k nearest permitted views, then use_views, within the filters. */
  function relevantViews(request: SdkRequest, permitted: Set<string>): { views: string[]; searched: string[]; error?: string } {
    const databases = list(request.vdp_database_names);
    const tags = list(request.vdp_tag_names);
    const inFilters = (view: SdkView) =>
      (!databases.length || databases.includes(databaseOf(view.name))) && (!tags.length || tags.some((t) => view.tags?.includes(t)));
    const searchable = options.views.filter((v) => permitted.has(v.name) && inFilters(v));
    const found = searchable
      .map((view, order) => ({ view, order, score: score(request.question, view, index) }))
      .sort((a, b) => b.score - a.score || a.order - b.order)
      .slice(0, request.vector_search_k)
      .map((s) => s.view.name);
    const chosen = [...found];
    // Associations of the views found, then use_views, up to vector_search_total_limit
    // (_get_and_append_associations); associations outside the filters are dropped in both versions here.
    for (const name of found.flatMap((f) => byName.get(f)?.associations ?? [])) {
      const view = byName.get(name);
      if (!view || !permitted.has(name) || chosen.includes(name) || !inFilters(view)) continue;
      if (chosen.length >= request.vector_search_total_limit) break;
      chosen.push(name);
    }
    for (const name of list(request.use_views)) {
      const view = byName.get(name);
      if (!view || !permitted.has(name) || chosen.includes(name)) continue;
      // 0.5 adds use_views whatever their database; newer versions drop views outside
      // vdp_database_names / vdp_tag_names unless allow_external_associations (_passes_external_filters).
      if (version !== '0.5' && !inFilters(view)) continue;
      if (chosen.length >= request.vector_search_total_limit) break;
      chosen.push(name);
    }
    const views = request.expand_set_views ? chosen : chosen.filter((v) => list(request.use_views).includes(v));
    if (views.length) return { views, searched: found };
    if (!options.views.length)
      return { views, searched: found, error: 'The vector store is empty. Please synchronize the metadata first.' };
    if (!found.length && (databases.length || tags.length)) {
      const filters = [
        ...(databases.length ? [`database filters: ${databases.map((d) => `"${d}"`).join(', ')}`] : []),
        ...(tags.length ? [`tag filters: ${tags.map((t) => `"${t}"`).join(', ')}`] : []),
      ];
      return {
        views,
        searched: found,
        error: `No relevant views found in the vector store matching your query with the specified ${filters.join(' and ')}. Try adjusting your filters or query.`,
      };
    }
    return {
      views,
      searched: found,
      error: 'No relevant views found in the vector store matching your query. Please try a different query.',
    };
  }

  /**
   * The SQL writer: it sees only `views` and the instructions. A question naming a view's words is
   * answered from that view; a follow-up naming none is resolved from the latest SQL in the
   * instructions, and only when that SQL's view is among `views`.
   */
  function writeSql(question: string, views: string[], instructions: string): WrittenSql | undefined {
    const year = /\b(19|20)\d{2}\b/.exec(question)?.[0];
    const best = views
      .map((name, order) => ({ name, order, score: score(question, byName.get(name)!, index) }))
      .filter((s) => s.score > 0)
      .sort((a, b) => b.score - a.score || a.order - b.order)[0];
    if (best) {
      return { views: [best.name], sql: `SELECT * FROM ${quoted(best.name)}${year ? ` WHERE "year" = ${year}` : ''}` };
    }
    const earlier = [...instructions.matchAll(/SELECT[^\n]*?FROM\s+("?[\w]+"?\."?[\w]+"?)[^\n]*/gi)].at(-1);
    if (!earlier) return undefined;
    const view = earlier[1]!.replaceAll('"', '');
    if (!views.includes(view)) return undefined;
    const previous = earlier[0].trim();
    if (!year) return { views: [view], sql: previous };
    const sql = /"year"\s*=\s*\d{4}/.test(previous)
      ? previous.replace(/"year"\s*=\s*\d{4}/, `"year" = ${year}`)
      : `SELECT * FROM ${quoted(view)} WHERE "year" = ${year}`;
    return { views: [view], sql };
  }

  function answerOf(request: SdkRequest, views: string[], instructions: string) {
    const written = (options.writeSql ?? writeSql)(request.question, views, instructions);
    const base = {
      query_explanation: '',
      related_questions: [] as string[],
      raw_graph: '',
      sql_execution_time: 0.01,
      vector_store_search_time: 0.02,
      llm_time: 0.5,
      total_execution_time: 0.6,
      // About four LLM prompts per question each carry the instructions and the views' schema.
      tokens: tokensOf(request.question, instructions, views),
    };
    if (!written) {
      return { ...base, answer: SDK_UNKNOWN_CATEGORY, sql_query: '', execution_result: {}, tables_used: version === '0.5' ? '' : [] };
    }
    const first = written.views[0]!;
    const row = (byName.get(first)?.columns ?? []).slice(0, 3).map((c, i) => ({ columnName: c.name, value: String(100 * (i + 1)) }));
    const answer = `From ${first}: ${row.map((c) => `${c.columnName} ${c.value}`).join(', ')}.`;
    return {
      ...base,
      answer: request.disclaimer ? `${answer}${SDK_DISCLAIMER}` : answer,
      sql_query: written.sql,
      query_explanation: `Reads ${written.views.join(', ')}.`,
      execution_result: { 'Row 1': row },
      tables_used: written.views,
    };
  }

  function tokensOf(question: string, instructions: string, views: string[]) {
    const schema = views.map((v) => JSON.stringify(byName.get(v))).join('\n');
    const perPrompt = Math.ceil((question.length + instructions.length + schema.length) / 4);
    const input = 4 * perPrompt;
    return { input_tokens: input, output_tokens: 200, total_tokens: input + 200 };
  }

  const handler = async (req: RecordedRequest, res: ServerResponse) => {
    const path = req.path.split('?')[0]!;
    if (req.method !== 'POST' || (path !== '/answerQuestion' && path !== '/streamAnswerQuestion')) {
      return sendJson(res, 404, { detail: 'Not Found' });
    }
    const bearer = /^bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const who =
      bearer && options.verifyBearer
        ? ((await options.verifyBearer(bearer)) ?? { status: 401, detail: 'Unauthorized' })
        : authenticate(req.headers.authorization, users);
    if (typeof who !== 'string') {
      // 0.5's HTTPBasic(auto_error) answers a missing header itself, with its own words.
      const detail = version === '0.5' && who.detail === 'Authentication required' ? 'Not authenticated' : who.detail;
      res.setHeader('www-authenticate', 'Basic');
      return sendJson(res, 401, { detail });
    }
    if (typeof req.body === 'string') {
      return sendJson(res, 422, { detail: [{ type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error', input: {} }] });
    }
    const { request, problems } = validate(req.body);
    if (!request) return sendJson(res, 422, { detail: problems });

    const permitted = new Set(users[who]?.views ?? []);
    if (!permitted.size) {
      return fail(res, 404, "You don't have permission to access any views in Denodo. Please contact your administrator.");
    }
    const { views, searched, error } = relevantViews(request, permitted);
    if (error) return fail(res, 404, error);

    const operator = options.operatorInstructions ?? '';
    const instructions =
      version === '0.5' ? (request.custom_instructions ?? operator) : `${operator}\n${request.custom_instructions ?? ''}`.trim();
    calls.push({ path, user: who, body: req.body as Record<string, unknown>, views, searched, instructions });
    if (llmFailure) {
      return fail(
        res,
        500,
        llmFailure,
        'Traceback (most recent call last):\n  File "api/utils/sdk_ai_tools.py", line 1\nopenai.RateLimitError',
      );
    }
    const reply = answerOf(request, views, instructions);
    if (path === '/answerQuestion') return sendJson(res, 200, reply);
    // The whole answer is computed first; only its text is streamed, with no SQL, tables or tokens.
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    for (const piece of reply.answer.match(/[\s\S]{1,16}/g) ?? []) res.write(piece);
    res.end();
  };

  const server = await startFakeHttpServer(handler);
  return {
    ...server,
    answerUrl: `${server.url}/answerQuestion`,
    streamUrl: `${server.url}/streamAnswerQuestion`,
    calls,
    failLlmWith(message) {
      llmFailure = message;
    },
    grant(user, views) {
      users[user]!.views = views;
    },
  };
}

/** The credentials a test user sends: `Basic base64(user:password)`. */
export function basicAuth(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}
