import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import {
  EXECUTE_VQL_MODEL,
  openApiDocument,
  type ReleaseModel,
  releaseModel,
  type SdkRelease,
  validateBody,
} from './denodo-sdk-releases.js';
import { type FakeHttpServer, type RecordedRequest, sendJson, startFakeHttpServer } from './fake-http-server.js';

export { SDK_RELEASES, type SdkRelease } from './denodo-sdk-releases.js';

/**
 * A stand-in for the Denodo AI SDK's `answerQuestion`, `answerDataQuestion`, `answerMetadataQuestion`, `streamAnswerQuestion`,
 * `executeVQL`, `getUserPermissions` and `/openapi.json`, by release (0.5, 0.13, 1.2.1, 1.4: denodo-sdk-releases.ts), written
 * from the SDK's public source (denodo/denodo-ai-sdk: api/endpoints/, api/utils/sdk_utils.py,
 * api/utils/answer_question.py, api/utils/ai_tools/table_retrieval.py).
 * What it keeps of the SDK, because memorychat depends on it (docs/denodo-ai-sdk.md):
 * - every call needs HTTP Basic or Bearer credentials, and each user sees only the views granted to it;
 * - the request is the release's pydantic model: comma-separated strings up to 1.2.1, lists in 1.4;
 *   FastAPI's 422 with pydantic's `type`/`loc`/`msg`/`input` list for a wrong type;
 * - clarifying questions (0.13 on, unless `check_ambiguity: false` from 1.0): `process_ambiguity_category`'s
 *   reply, no SQL and the views the search found as `tables_used`;
 * - an answer with SQL has as `tables_used` every view the search found too (with their associations
 *   and `use_views`), not only those its SQL read (`prepare_response`, in every release read);
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
  /** The Data Marketplace's global administrator flag, as `getUserPermissions` reports it. */
  isAdmin?: boolean;
  /** The user's VDP roles, as `getUserPermissions` reports them. */
  roles?: string[];
}

export interface StandInOptions {
  views: SdkView[];
  users: Record<string, SdkUser>;
  /** The SDK release to behave as; the newest (1.4) unless named. */
  release?: SdkRelease;
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
  /**
   * The SDK's LLM finding a question ambiguous (category detection with its ambiguity block): the
   * clarifying question to ask, or undefined. It sees the question and the custom instructions. Unset: never.
   */
  clarify?: (question: string, instructions: string) => Ambiguity | undefined;
  /** false: no `/openapi.json` (behind a proxy that hides it); served by default, as FastAPI does. */
  openApi?: boolean;
  /** Views whose rows VDP masks for every user: an answer reading one says `is_masked: true` (1.4). */
  maskedViews?: string[];
}

/** One `<ambiguous_input>` of the category prompt's reply: its type code and clarifying question. */
export interface Ambiguity {
  type: 'UNCL_SCHEMA' | 'TEMP' | 'OUTPUT' | 'QUAL' | 'MISSING_OBL';
  question: string;
}

/** The SQL written for a question and the views it reads (named in it; the reply's `tables_used` are all the views considered). */
export interface WrittenSql {
  sql: string;
  views: string[];
}

export const SDK_DISCLAIMER =
  "\n\nDISCLAIMER: This response has been generated based on an LLM's interpretation of the data and may not be accurate.";
export const SDK_UNKNOWN_CATEGORY =
  "Sorry, that doesn't seem something I can help you with. Are you sure that question is related to your Denodo instance?";

/** api/utils/answer_question.py's AMBIGUITY_TYPE_LABELS. */
const AMBIGUITY_LABELS: Record<Ambiguity['type'], string> = {
  UNCL_SCHEMA: 'Unclear schema reference',
  TEMP: 'Temporal ambiguity',
  OUTPUT: 'Output schema ambiguity',
  QUAL: 'Qualitative ambiguity',
  MISSING_OBL: 'Missing obligatory input',
};
export const SDK_AMBIGUITY_INTRO =
  'The LLM detected some ambiguity in your input. Please re-submit your question clarifying the following things:';

/** build_ambiguity_message: the SDK's answer to an ambiguous question. */
export function ambiguityMessage(ambiguity: Ambiguity): string {
  return [SDK_AMBIGUITY_INTRO, '', `- ${AMBIGUITY_LABELS[ambiguity.type]}: ${ambiguity.question}`].join('\n');
}

/** One answered call, as the stand-in saw it. */
export interface SdkCall {
  path: string;
  user: string;
  body: Record<string, unknown>;
  headers: IncomingHttpHeaders;
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
  dataUrl: string;
  metadataUrl: string;
  executeVqlUrl: string;
  openApiUrl: string;
  readonly release: SdkRelease;
  /** Behave as another release from now on (an SDK upgraded in place). */
  useRelease(release: SdkRelease): void;
  calls: SdkCall[];
  /** Every later call fails as the SDK does when its LLM provider does (HTTP 500, `detail.error`); undefined to stop. */
  failLlmWith(message: string | undefined): void;
  /** Grants or revokes views of a user, as a VDP administrator would. */
  grant(user: string, views: string[]): void;
  /** Every `executeVQL` call, as the stand-in saw it: the user and the VQL. */
  executions: { user: string; vql: string }[];
  /** Every `getUserPermissions` call: the user it answered for. */
  permissionLookups: { user: string }[];
  /** Every later `getUserPermissions` fails as the SDK does when the Data Marketplace does (HTTP 500); false to stop. */
  failPermissionsLookup(fail: boolean): void;
}

/** The request as the SDK's code reads it, after validation: lists as lists whatever the release's field type. */
interface SdkRequest {
  question: string;
  vdp_database_names: string[];
  vdp_tag_names: string[];
  use_views: string[];
  filter_logic: 'AND' | 'OR';
  allow_external_associations: boolean;
  custom_instructions?: string;
  expand_set_views: boolean;
  disclaimer: boolean;
  check_ambiguity: boolean;
  vector_search_k: number;
  vector_search_total_limit: number;
}

/** `[x.strip() for x in value.split(',') if x.strip()]`, or the 1.4 list stripped the same way. */
const listOf = (value: unknown): string[] =>
  (Array.isArray(value) ? value.map(String) : typeof value === 'string' ? value.split(',') : []).map((v) => v.trim()).filter(Boolean);

/** The validated values as the release's code uses them; fields it lacks take what it does without them. */
function requestOf(model: ReleaseModel, values: Record<string, unknown>): SdkRequest {
  const { traits } = model;
  return {
    question: values.question as string,
    vdp_database_names: listOf(values.vdp_database_names),
    vdp_tag_names: traits.tagsAndLimits ? listOf(values.vdp_tag_names) : [],
    use_views: listOf(values.use_views),
    filter_logic: traits.filterLogic ? (values.filter_logic as 'AND' | 'OR') : 'AND',
    // 0.5 adds use_views whatever their database.
    allow_external_associations: traits.tagsAndLimits ? (values.allow_external_associations as boolean) : true,
    custom_instructions: values.custom_instructions as string | undefined,
    expand_set_views: values.expand_set_views as boolean,
    disclaimer: values.disclaimer as boolean,
    check_ambiguity: traits.ambiguity === 'always' || (traits.ambiguity === 'field' && (values.check_ambiguity as boolean)),
    vector_search_k: values.vector_search_k as number,
    // 0.5 has no total limit.
    vector_search_total_limit: traits.tagsAndLimits ? (values.vector_search_total_limit as number) : Number.POSITIVE_INFINITY,
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

/** The quoted name the SDK's prompts teach the LLM to write: "database"."view". */
const quoted = (view: string) =>
  view
    .split('.')
    .map((p) => `"${p}"`)
    .join('.');

export async function startDenodoSdkStandIn(options: StandInOptions): Promise<DenodoSdkStandIn> {
  // Mutable: a test file may upgrade the SDK under one memorychat (useRelease), as an operator would.
  let model = releaseModel(options.release ?? '1.4');
  const users = structuredClone(options.users);
  const index = new Map(options.views.map((v) => [v.name, viewWords(v)]));
  const byName = new Map(options.views.map((v) => [v.name, v]));
  const calls: SdkCall[] = [];
  const executions: { user: string; vql: string }[] = [];
  const permissionLookups: { user: string }[] = [];
  let llmFailure: string | undefined;
  let permissionsFailure = false;

  const fail = (res: ServerResponse, status: number, error: string, traceback = '') =>
    sendJson(res, status, { detail: { error, traceback } });

  /** table_retrieval.get_relevant_tables: the k nearest permitted views, then use_views, within the filters. */
  function relevantViews(request: SdkRequest, permitted: Set<string>): { views: string[]; searched: string[]; error?: string } {
    const databases = request.vdp_database_names;
    const tags = request.vdp_tag_names;
    const inDatabases = (view: SdkView) => databases.includes(databaseOf(view.name));
    const inTags = (view: SdkView) => tags.some((t) => view.tags?.includes(t));
    const inFilters = (view: SdkView) => {
      if (!databases.length || !tags.length) return (!databases.length || inDatabases(view)) && (!tags.length || inTags(view));
      // 1.4's filter_logic: OR by default; a view had to pass both before it.
      return request.filter_logic === 'OR' ? inDatabases(view) || inTags(view) : inDatabases(view) && inTags(view);
    };
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
    for (const name of request.use_views) {
      const view = byName.get(name);
      if (!view || !permitted.has(name) || chosen.includes(name)) continue;
      // Views outside vdp_database_names / vdp_tag_names are dropped unless allow_external_associations
      // (_passes_external_filters; 0.5 has no such check, and 0.13 allows them by default).
      if (!request.allow_external_associations && !inFilters(view)) continue;
      if (chosen.length >= request.vector_search_total_limit) break;
      chosen.push(name);
    }
    const views = request.expand_set_views ? chosen : chosen.filter((v) => request.use_views.includes(v));
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
   * answered from that view; a follow-up naming none ("What about 2023?", "2024 please") is resolved
   * from the latest line of the instructions that holds SQL or names one of `views` (an earlier
   * question, a clarifying question), and only when that SQL's view is among `views`.
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
    const latest = instructions
      .split('\n')
      .reverse()
      .map((line) => ({ line, sql: /SELECT[^\n]*?FROM\s+("?[\w]+"?\."?[\w]+"?)[^\n]*/i.exec(line) }))
      .find(({ line, sql }) => sql || views.some((v) => score(line, byName.get(v)!, index) > 0));
    if (!latest) return undefined;
    if (!latest.sql) {
      const named = views.find((v) => score(latest.line, byName.get(v)!, index) > 0)!;
      return { views: [named], sql: `SELECT * FROM ${quoted(named)}${year ? ` WHERE "year" = ${year}` : ''}` };
    }
    const earlier = latest.sql;
    const view = earlier[1]!.replaceAll('"', '');
    if (!views.includes(view)) return undefined;
    const previous = earlier[0].trim();
    if (!year) return { views: [view], sql: previous };
    const sql = /"year"\s*=\s*\d{4}/.test(previous)
      ? previous.replace(/"year"\s*=\s*\d{4}/, `"year" = ${year}`)
      : `SELECT * FROM ${quoted(view)} WHERE "year" = ${year}`;
    return { views: [view], sql };
  }

  /**
   * A reply without SQL (process_metadata_category, process_ambiguity_category): no rows, and every
   * view the search found as tables_used.
   */
  function replyWithoutSql(answer: string, request: SdkRequest, views: string[], instructions: string) {
    return {
      answer,
      sql_query: '',
      query_explanation: '',
      tokens: tokensOf(request.question, instructions, views),
      related_questions: [] as string[],
      execution_result: {},
      tables_used: views,
      raw_graph: '',
      sql_execution_time: 0,
      vector_store_search_time: 0.02,
      llm_time: 0.3,
      total_execution_time: 0.32,
    };
  }

  /** answerMetadataQuestion: an answer from the views' schema alone. */
  function metadataAnswerOf(request: SdkRequest, views: string[], instructions: string) {
    const described = views.map((name) => `${name} (${(byName.get(name)?.columns ?? []).map((c) => c.name).join(', ')})`);
    return replyWithoutSql(`These views hold it: ${described.join('; ')}.`, request, views, instructions);
  }

  function answerOf(request: SdkRequest, views: string[], instructions: string) {
    const llm = model.traits.llmInReply ? { llm_provider: 'OpenAI', llm_model: 'gpt-5.2-none' } : {};
    const ambiguity = request.check_ambiguity ? options.clarify?.(request.question, instructions) : undefined;
    if (ambiguity) {
      return { ...replyWithoutSql(ambiguityMessage(ambiguity), request, views, instructions), ...llm };
    }
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
      // process_unknown_category's tables_used is '' in every release read.
      return { ...base, answer: SDK_UNKNOWN_CATEGORY, sql_query: '', execution_result: {}, tables_used: '', ...llm };
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
      // prepare_response: every view the search considered (vector_search_tables), not only those the SQL read.
      tables_used: views,
      ...llm,
      ...(model.traits.isMasked ? { is_masked: written.views.some((v) => options.maskedViews?.includes(v)) } : {}),
    };
  }

  function tokensOf(question: string, instructions: string, views: string[]) {
    const schema = views.map((v) => JSON.stringify(byName.get(v))).join('\n');
    const perPrompt = Math.ceil((question.length + instructions.length + schema.length) / 4);
    const input = 4 * perPrompt;
    return { input_tokens: input, output_tokens: 200, total_tokens: input + 200 };
  }

  /** FastAPI's HTTPBasic / HTTPBearer dependency: the user, or the 401 already sent. */
  async function caller(req: RecordedRequest, res: ServerResponse): Promise<string | undefined> {
    const bearer = /^bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const who =
      bearer && options.verifyBearer
        ? ((await options.verifyBearer(bearer)) ?? { status: 401, detail: 'Unauthorized' })
        : authenticate(req.headers.authorization, users);
    if (typeof who === 'string') return who;
    // 0.5's HTTPBasic(auto_error) answers a missing header itself, with its own words.
    const detail = model.release === '0.5' && who.detail === 'Authentication required' ? 'Not authenticated' : who.detail;
    res.setHeader('www-authenticate', 'Basic');
    sendJson(res, 401, { detail });
    return undefined;
  }

  /** FastAPI's request body: JSON, then the pydantic model; the 422 already sent otherwise. */
  function bodyOf(req: RecordedRequest, res: ServerResponse, fields: ReleaseModel['fields']): Record<string, unknown> | undefined {
    if (typeof req.body === 'string') {
      sendJson(res, 422, {
        detail: [{ type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error', input: {}, ctx: { error: 'Expecting value' } }],
      });
      return undefined;
    }
    const { values, problems } = validateBody(fields, req.body);
    if (!values) sendJson(res, 422, { detail: problems });
    return values;
  }

  /** executeVQL: the VQL run with the caller's credentials, so VDP's permissions apply. */
  function executeVql(who: string, values: Record<string, unknown>, res: ServerResponse) {
    const vql = values.vql as string;
    executions.push({ user: who, vql });
    const view = /FROM\s+("?[\w]+"?\."?[\w]+"?)/i.exec(vql)?.[1]?.replaceAll('"', '');
    if (!view || !byName.has(view)) return sendJson(res, 400, { detail: `VQL execution failed: Syntax error: ${vql}` });
    if (!users[who]?.views.includes(view)) {
      return sendJson(res, 403, { detail: `VQL execution failed: The user ${who} does not have privileges to execute ${view}` });
    }
    // execute_vql's EMPTY outcome (no rows) is an empty execution_result.
    if (/WHERE\s+1\s*=\s*0/i.test(vql)) return sendJson(res, 200, { vql, execution_result: {} });
    const row = (byName.get(view)?.columns ?? []).slice(0, 3).map((c, i) => ({ columnName: c.name, value: String(100 * (i + 1)) }));
    return sendJson(res, 200, { vql, execution_result: { 'Row 1': row } });
  }

  /**
   * getUserPermissions: the Data Marketplace's profile of the caller (its `user-permissions` answer
   * less `viewsPermissions`, which the endpoint does not return), as UserPermissionsResponse.
   */
  function userPermissions(who: string, res: ServerResponse) {
    permissionLookups.push({ user: who });
    if (permissionsFailure) {
      return sendJson(res, 500, {
        detail: 'Failed to get user permissions from Data Marketplace: Cannot connect to host localhost:9090',
      });
    }
    const user = users[who];
    return sendJson(res, 200, {
      username: who,
      is_admin: user?.isAdmin ?? false,
      roles: user?.roles ?? [],
      legacy_permissions_endpoint: false,
    });
  }

  const ANSWER_PATHS = new Set(['/answerQuestion', '/answerDataQuestion', '/answerMetadataQuestion', '/streamAnswerQuestion']);
  const handler = async (req: RecordedRequest, res: ServerResponse) => {
    const path = req.path.split('?')[0]!;
    // api/middleware.py (0.10 on): every reply carries the transaction id the SDK's log lines carry.
    if (model.release !== '0.5') res.setHeader('x-transaction-id', randomUUID());
    if (req.method === 'GET' && path === '/openapi.json' && options.openApi !== false) return sendJson(res, 200, openApiDocument(model));
    const vqlPath = model.traits.executeVql && path === '/executeVQL';
    if (req.method === 'GET' && model.traits.userPermissions && path === '/getUserPermissions') {
      const who = await caller(req, res);
      if (who) userPermissions(who, res);
      return;
    }
    if (req.method !== 'POST' || (!ANSWER_PATHS.has(path) && !vqlPath)) {
      return sendJson(res, 404, { detail: 'Not Found' });
    }
    const who = await caller(req, res);
    if (!who) return;
    if (vqlPath) {
      const values = bodyOf(req, res, EXECUTE_VQL_MODEL);
      return values && executeVql(who, values, res);
    }
    const values = bodyOf(req, res, model.fields);
    if (!values) return;
    const request = requestOf(model, values);

    const permitted = new Set(users[who]?.views ?? []);
    if (!permitted.size) {
      return fail(res, 404, "You don't have permission to access any views in Denodo. Please contact your administrator.");
    }
    const { views, searched, error } = relevantViews(request, permitted);
    if (error) return fail(res, 404, error);

    const operator = options.operatorInstructions ?? '';
    // Before 0.10.2 CUSTOM_INSTRUCTIONS is the field's default, so a request's custom_instructions replace it.
    const instructions = model.traits.mergesInstructions
      ? `${operator}\n${request.custom_instructions ?? ''}`.trim()
      : (request.custom_instructions ?? operator);
    calls.push({ path, user: who, body: req.body as Record<string, unknown>, headers: req.headers, views, searched, instructions });
    if (llmFailure) {
      return fail(
        res,
        500,
        llmFailure,
        'Traceback (most recent call last):\n  File "api/utils/sdk_ai_tools.py", line 1\nopenai.RateLimitError',
      );
    }
    if (path === '/answerMetadataQuestion') return sendJson(res, 200, metadataAnswerOf(request, views, instructions));
    const reply = answerOf(request, views, instructions);
    if (path !== '/streamAnswerQuestion') return sendJson(res, 200, reply);
    // The whole answer is computed first; only its text is streamed, with no SQL, tables or tokens.
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    for (const piece of reply.answer.match(/[\s\S]{1,16}/g) ?? []) res.write(piece);
    res.end();
  };

  const server = await startFakeHttpServer(handler, { servesOpenApi: true });
  return {
    ...server,
    answerUrl: `${server.url}/answerQuestion`,
    dataUrl: `${server.url}/answerDataQuestion`,
    metadataUrl: `${server.url}/answerMetadataQuestion`,
    streamUrl: `${server.url}/streamAnswerQuestion`,
    executeVqlUrl: `${server.url}/executeVQL`,
    openApiUrl: `${server.url}/openapi.json`,
    get release() {
      return model.release;
    },
    useRelease(release) {
      model = releaseModel(release);
    },
    calls,
    executions,
    permissionLookups,
    failPermissionsLookup(fail) {
      permissionsFailure = fail;
    },
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
