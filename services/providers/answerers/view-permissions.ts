import { createHash } from 'node:crypto';
import type { Config } from '../../config/config.js';
import { upstreamAuthorization, upstreamCredentials } from './upstream-auth.js';

/**
 * Which views a caller may read in Denodo now, asked of the Denodo AI SDK with the caller's own
 * credentials (docs/denodo-ai-sdk.md#views-readable-now). The SDK's `GET /getUserPermissions` (1.2 on)
 * answers the Data Marketplace profile `{username, is_admin, roles, legacy_permissions_endpoint}` and
 * no views, so an administrator reads every view and anyone else's views are asked one by one of its
 * `POST /executeVQL` (1.2.1 on), which runs VQL with the caller's credentials: VDP refuses a view the
 * user may not read. The answers are kept per credential for MEMORY_VIEW_PERMISSIONS_TTL.
 */
export interface ViewPermissions {
  readable(caller: ViewCaller, views: readonly string[]): Promise<ReadableViews>;
}

/** Whose permissions: the user, and the credentials the answerer would send for them. */
export interface ViewCaller {
  tenantId: string;
  userId: string;
  /** The API key acting for the user, if one does: whether a linked account may stand in for the credentials. */
  apiKeyId?: string;
  /** The caller's X-Upstream-Authorization (ANSWER_AUTH=forward). */
  upstreamAuthorization?: string;
}

export type ReadableViews =
  | { status: 'checked'; readable: ReadonlySet<string> }
  /** The upstream could not say: memory keeps today's bounds only. */
  | { status: 'unavailable'; reason: string };

/** A probe of one view is a query; past this it is taken as no answer, so a slow SDK does not hold up memory. */
const CHECK_TIMEOUT_MS = 5_000;
/** Probes under way at once for one request: a search of 50 turns must not open 50 queries on Denodo together. */
const PROBES_AT_ONCE = 8;
/** The most views kept per credential; past it that credential's views are asked again. */
const MAX_VIEWS_PER_CREDENTIAL = 1_000;

type Profile = { kind: 'admin' } | { kind: 'user' } | { kind: 'unavailable'; reason: string };

interface Entry {
  expiresAt: number;
  profile: Profile;
  views: Map<string, boolean>;
}

class Unanswered extends Error {
  constructor(
    readonly reason: string,
    /** The SDK lacks the endpoint: worth remembering for the TTL, unlike a failure that may pass. */
    readonly lasting = false,
  ) {
    super(reason);
  }
}

export function createViewPermissions(
  config: Pick<
    Config,
    | 'ANSWER_URL'
    | 'ANSWER_EXECUTE_URL'
    | 'answerAuth'
    | 'ANSWER_BASIC_USER'
    | 'ANSWER_BASIC_PASSWORD'
    | 'ANSWER_BEARER_TOKEN'
    | 'viewPermissionsTtlMs'
    | 'MEMORY_VIEW_PERMISSIONS_CACHE_ENTRIES'
  >,
  clock: () => number = Date.now,
): ViewPermissions {
  const base = config.ANSWER_URL;
  const profileUrl = base ? new URL('getUserPermissions', base).href : undefined;
  const executeUrl = config.ANSWER_EXECUTE_URL ?? (base ? new URL('executeVQL', base).href : undefined);
  // Insertion order is recency: a hit is moved to the end, the first key is the least recently used.
  const entries = new Map<string, Entry>();

  const credentials = upstreamCredentials(config);

  function entryFor(key: string): Entry | undefined {
    const entry = entries.get(key);
    if (!entry) return undefined;
    entries.delete(key);
    if (entry.expiresAt <= clock()) return undefined;
    entries.set(key, entry);
    return entry;
  }

  function remember(key: string, entry: Entry) {
    entries.delete(key);
    entries.set(key, entry);
    while (entries.size > config.MEMORY_VIEW_PERMISSIONS_CACHE_ENTRIES) entries.delete(entries.keys().next().value!);
  }

  async function profileOf(authorization: string): Promise<Profile> {
    const response = await call(profileUrl!, { method: 'GET', headers: { authorization, accept: 'application/json' } });
    if (response.status === 404) {
      throw new Unanswered('the Denodo AI SDK has no /getUserPermissions (it came with 1.2)', true);
    }
    if (!response.ok) throw new Unanswered(`/getUserPermissions answered HTTP ${response.status}`);
    const body = (await response.json().catch(() => undefined)) as { is_admin?: unknown } | undefined;
    if (!body || typeof body !== 'object') throw new Unanswered('/getUserPermissions did not reply with JSON');
    return body.is_admin === true ? { kind: 'admin' } : { kind: 'user' };
  }

  /** Whether VDP lets the credential read the view: a query that returns no rows, run as the caller. */
  async function canRead(authorization: string, view: string): Promise<boolean> {
    const response = await call(executeUrl!, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ vql: `SELECT * FROM ${quotedView(view)} WHERE 1 = 0`, limit: 1 }),
    });
    if (response.ok) return true;
    const detail = await response.json().then(
      (body: { detail?: unknown }) => (typeof body?.detail === 'string' ? body.detail : ''),
      () => '',
    );
    // FastAPI's own 404 names no VQL: the SDK has no /executeVQL (before 1.2.1).
    if (response.status === 404 && !detail.startsWith('VQL execution failed')) {
      throw new Unanswered('the Denodo AI SDK has no /executeVQL (it came with 1.2.1)', true);
    }
    // The SDK's 4xx for a query VDP refused: no privilege, or no such view any more.
    if (response.status >= 400 && response.status < 500 && response.status !== 401 && response.status !== 422) return false;
    throw new Unanswered(`/executeVQL answered HTTP ${response.status}`);
  }

  return {
    async readable(caller, views) {
      const authorization = upstreamAuthorization(credentials, caller.upstreamAuthorization);
      if (!profileUrl || !executeUrl) return { status: 'unavailable', reason: 'no upstream answerer to ask' };
      if (!authorization) return { status: 'unavailable', reason: 'no upstream credentials to ask with' };
      // The user's own entry: the credential alone could be sent by two users (ANSWER_AUTH=basic).
      const key = createHash('sha256').update(`${caller.tenantId}\0${caller.userId}\0${authorization}`).digest('base64url');
      try {
        let entry = entryFor(key);
        if (!entry) {
          entry = { expiresAt: clock() + config.viewPermissionsTtlMs, profile: await profileOf(authorization), views: new Map() };
          remember(key, entry);
        }
        const { profile } = entry;
        if (profile.kind === 'unavailable') return { status: 'unavailable', reason: profile.reason };
        const wanted = [...new Set(views)];
        if (profile.kind === 'admin') return { status: 'checked', readable: new Set(wanted) };
        const known = entry.views;
        const unknown = wanted.filter((view) => !known.has(view));
        const answers: boolean[] = [];
        for (let i = 0; i < unknown.length; i += PROBES_AT_ONCE) {
          answers.push(...(await Promise.all(unknown.slice(i, i + PROBES_AT_ONCE).map((view) => canRead(authorization, view)))));
        }
        const verdicts = new Map([...wanted.map((view) => [view, known.get(view) === true] as const)]);
        if (known.size + unknown.length > MAX_VIEWS_PER_CREDENTIAL) known.clear();
        for (const [i, view] of unknown.entries()) {
          verdicts.set(view, answers[i]!);
          known.set(view, answers[i]!);
        }
        return { status: 'checked', readable: new Set(wanted.filter((view) => verdicts.get(view))) };
      } catch (err) {
        if (err instanceof Unanswered) {
          if (err.lasting) {
            remember(key, {
              expiresAt: clock() + config.viewPermissionsTtlMs,
              profile: { kind: 'unavailable', reason: err.reason },
              views: new Map(),
            });
          }
          return { status: 'unavailable', reason: err.reason };
        }
        const timedOut = (err as Error).name === 'TimeoutError';
        return {
          status: 'unavailable',
          reason: timedOut ? 'the Denodo AI SDK did not answer in time' : 'the Denodo AI SDK could not be reached',
        };
      }
    },
  };
}

function call(url: string, init: RequestInit): Promise<Response> {
  return fetch(url, { ...init, signal: AbortSignal.timeout(CHECK_TIMEOUT_MS) });
}

/** `database.view` (quoted or not, as tables_used has it) as VQL quotes it: capitals and reserved words stay one identifier. */
function quotedView(view: string): string {
  return view
    .split('.')
    .map((part) => `"${part.replaceAll('"', '')}"`)
    .join('.');
}
