import { type Agent, request } from 'undici';

/**
 * The Denodo AI SDK's filter fields, which 1.4 declares as `List[str]` and every earlier release as a
 * comma-separated `str`; each release answers the other form with a 422 (docs/denodo-ai-sdk.md#releases).
 */
export const LIST_FIELDS = ['vdp_database_names', 'vdp_tag_names', 'use_views'] as const;

/** `list`: JSON arrays (SDK 1.4); `comma`: comma-separated strings (SDK 0.5 to 1.2.1). */
export type ListEncoding = 'list' | 'comma';

/** ANSWER_LIST_FIELDS: `auto` learns the encoding from the answerer; the others fix it. */
export type ListEncodingSetting = 'auto' | ListEncoding;

/** A caller's list or comma-separated string, as the values it names. */
export function listValues(value: unknown): string[] {
  const items = Array.isArray(value) ? value.map(String) : typeof value === 'string' ? value.split(',') : [];
  return items.map((v) => v.trim()).filter(Boolean);
}

/** Sets each list field present in `body` in the encoding given. */
export function encodeListFields(body: Record<string, unknown>, encoding: ListEncoding): void {
  for (const field of LIST_FIELDS) {
    if (body[field] === undefined || body[field] === null) continue;
    const values = listValues(body[field]);
    body[field] = encoding === 'list' ? values : values.join(',');
  }
}

/**
 * The encoding a FastAPI 422 asks for, when it names one of the list fields: `list_type` (a string
 * where 1.4 wants a list) or `string_type` on the field itself (a list where older releases want a string).
 */
export function encodingAskedBy422(detail: unknown): ListEncoding | undefined {
  if (!Array.isArray(detail)) return undefined;
  for (const problem of detail) {
    if (!problem || typeof problem !== 'object') continue;
    const { loc, type } = problem as { loc?: unknown; type?: unknown };
    if (!Array.isArray(loc) || loc[0] !== 'body' || !(LIST_FIELDS as readonly unknown[]).includes(loc[1])) continue;
    if (type === 'list_type') return 'list';
    if (type === 'string_type' && loc.length === 2) return 'comma';
  }
  return undefined;
}

/** The encoding an SDK's `/openapi.json` declares for the endpoint's request model, if it says. */
export function encodingInOpenApi(document: unknown, endpointPath: string): ListEncoding | undefined {
  const doc = document as {
    paths?: Record<string, { post?: { requestBody?: { content?: Record<string, { schema?: { $ref?: string } }> } } }>;
    components?: { schemas?: Record<string, { properties?: Record<string, unknown> }> };
  };
  if (!doc || typeof doc !== 'object' || !doc.paths) return undefined;
  // FastAPI lists paths without AI_SDK_ROOT_PATH: match the endpoint's last segment.
  const last = `/${endpointPath.split('/').filter(Boolean).at(-1) ?? ''}`;
  const operation = doc.paths[last] ?? Object.entries(doc.paths).find(([p]) => p.endsWith(last))?.[1];
  const ref = operation?.post?.requestBody?.content?.['application/json']?.schema?.$ref;
  const name = ref?.startsWith('#/components/schemas/') ? ref.slice('#/components/schemas/'.length) : undefined;
  const properties = name ? doc.components?.schemas?.[name]?.properties : undefined;
  if (!properties) return undefined;
  for (const field of LIST_FIELDS) {
    const types = typesOf(properties[field]);
    if (types.has('array')) return 'list';
    if (types.has('string')) return 'comma';
  }
  return undefined;
}

/** A JSON Schema's types, through pydantic's `anyOf` for optional fields. */
function typesOf(schema: unknown): Set<string> {
  if (!schema || typeof schema !== 'object') return new Set();
  const s = schema as { type?: unknown; anyOf?: unknown[] };
  const own = typeof s.type === 'string' ? [s.type] : Array.isArray(s.type) ? s.type.map(String) : [];
  return new Set([...own, ...(s.anyOf ?? []).flatMap((a) => [...typesOf(a)])]);
}

export interface ListEncodingOptions {
  setting: ListEncodingSetting;
  /** The answer endpoint (ANSWER_URL); its `/openapi.json` is its sibling. */
  url: string;
  agent: Agent;
  timeoutMs: number;
  log?: { info?(obj: object, msg: string): void };
}

/** How long the `/openapi.json` look-up may take at first contact before the 422 is relied on instead. */
const OPENAPI_TIMEOUT_MS = 5000;

/**
 * The list encoding of one answerer, learnt at first contact and remembered: from the SDK's
 * `/openapi.json` when it serves one, else comma-separated strings until a 422 names a list field and
 * asks for the other form (`learn`, after which the caller retries once). An upgraded SDK is relearnt
 * the same way. With ANSWER_LIST_FIELDS set, that encoding is used and nothing is learnt.
 */
export function listEncodingOf(options: ListEncodingOptions) {
  let known: ListEncoding | undefined = options.setting === 'auto' ? undefined : options.setting;
  let detecting: Promise<ListEncoding> | undefined;

  async function detect(): Promise<ListEncoding> {
    const openapiUrl = new URL('openapi.json', options.url);
    let found: ListEncoding | undefined;
    try {
      const response = await request(openapiUrl, {
        dispatcher: options.agent,
        method: 'GET',
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(Math.min(options.timeoutMs, OPENAPI_TIMEOUT_MS)),
      });
      const text = await response.body.text();
      if (response.statusCode === 200) found = encodingInOpenApi(JSON.parse(text), new URL(options.url).pathname);
    } catch {
      // No /openapi.json (docs off, a proxy, not FastAPI): the first 422 decides.
    }
    options.log?.info?.(
      { listEncoding: found ?? 'comma', openapiUrl: openapiUrl.origin + openapiUrl.pathname, detected: found !== undefined },
      found
        ? `the answering backend takes ${LIST_FIELDS.join(', ')} as ${inWords(found)} (from its /openapi.json)`
        : `the answering backend's /openapi.json does not say how it takes ${LIST_FIELDS.join(', ')}: sending ${inWords('comma')} until it answers 422 asking for lists`,
    );
    return found ?? 'comma';
  }

  return {
    async current(): Promise<ListEncoding> {
      if (known) return known;
      detecting ??= detect();
      known = await detecting;
      return known;
    },
    /** After a 422: the encoding it asks for when that differs from `sent` (then remembered), else undefined. */
    learn(detail: unknown, sent: ListEncoding): ListEncoding | undefined {
      if (options.setting !== 'auto') return undefined;
      const asked = encodingAskedBy422(detail);
      if (!asked || asked === sent) return undefined;
      known = asked;
      options.log?.info?.(
        { listEncoding: asked },
        `the answering backend refused ${inWords(sent)} for ${LIST_FIELDS.join(', ')} (422): sending ${inWords(asked)} from now on`,
      );
      return asked;
    },
  };
}

export type ListEncodingState = ReturnType<typeof listEncodingOf>;

function inWords(encoding: ListEncoding): string {
  return encoding === 'list' ? 'JSON lists' : 'comma-separated strings';
}
