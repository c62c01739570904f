import { createHash, randomUUID } from 'node:crypto';
import {
  ClaimTakenOverError,
  claimIdempotencyKey,
  completeIdempotencyKey,
  findIdempotencyKey,
  type IdempotencyKeyRef,
  releaseIdempotencyKey,
  renewIdempotencyClaim,
} from '../../db/repositories/idempotency.js';
import type { ScopedDatabase } from '../../db/row-security.js';
import { AppError } from '../../model/errors.js';
import type { Identity } from '../../model/identity.js';

/*
 * Idempotency-Key handling (docs/idempotency.md), after Stripe and
 * draft-ietf-httpapi-idempotency-key-header: the first request with a key claims it, runs, and
 * stores its 2xx response; a retry with the same key and the same request replays that response
 * without running again; a retry with another request is refused; a retry while the first still
 * runs is told to come back.
 */

export interface IdempotencySettings {
  /** How long a completed key replays its response (IDEMPOTENCY_TTL). */
  ttlMs: number;
  /**
   * How long a claim stays `in_progress` without being renewed. The run holding it renews it every
   * third of this while it works, so only a claim whose process died lapses, within this long, and a
   * retry may then take it over (IDEMPOTENCY_CLAIM_LEASE).
   */
  leaseMs: number;
}

export interface IdempotencyDeps {
  db: ScopedDatabase;
  clock: () => Date;
  settings: IdempotencySettings;
  log: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
}

export interface IdempotentRequest {
  identity: Identity;
  key: string;
  /** The route pattern, e.g. `POST /sessions/:id/turns`. */
  route: string;
  /** `requestFingerprint(...)` of the request. */
  fingerprint: string;
}

export interface IdempotentResponse {
  status: number;
  body: unknown;
  /** True when this is the stored response of an earlier request. */
  replayed: boolean;
}

/** 1..255 printable ASCII characters (space to tilde). */
const KEY_PATTERN = /^[\x20-\x7E]{1,255}$/;
/** What a client waiting for an in-progress key is told: the answer usually takes seconds. */
export const IN_PROGRESS_RETRY_AFTER_SECONDS = 1;
/** Claim attempts before giving up: a key can be released or expire between a claim and a read. */
const CLAIM_ATTEMPTS = 3;

export class IdempotencyInProgressError extends AppError {
  readonly retryAfterSeconds = IN_PROGRESS_RETRY_AFTER_SECONDS;
  constructor(key: string) {
    super('idempotency-in-progress', `a request with Idempotency-Key "${key}" is still being processed; retry shortly`);
  }
}

export function assertValidIdempotencyKey(key: string): void {
  if (!KEY_PATTERN.test(key)) {
    throw new AppError('validation-failed', 'Idempotency-Key must be 1 to 255 printable ASCII characters', {
      errors: [{ field: 'headers.idempotency-key', message: 'must be 1 to 255 printable ASCII characters' }],
    });
  }
}

/**
 * sha256 of the route, its path parameters and the body as canonical JSON (object keys sorted),
 * so that the same request sent with its fields in another order is still the same request.
 */
export function requestFingerprint(route: string, params: unknown, body: unknown): string {
  return createHash('sha256')
    .update(`${route}\n${canonicalJson(params ?? {})}\n${canonicalJson(body ?? null)}`)
    .digest('hex');
}

export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
        .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/**
 * What an idempotent run gets: its claim on the key, which the store completes in the same
 * transaction as the turn it writes (appendTurnCompletingKey), so no crash can separate the two.
 */
export interface IdempotencyClaim {
  ref: IdempotencyKeyRef;
  claimId: string;
  /** The status the response is stored and replayed with. */
  status: number;
  /** Set once the claim is completed with the run's response. */
  completed: boolean;
}

/**
 * Runs `run` at most once per (tenant, user, key) within the TTL and returns its response, or the
 * stored response of the earlier run. Only 2xx responses are stored; when `run` throws or answers
 * otherwise, the claim is released so that the client may retry with the same key. The run completes
 * the claim itself, with the turn it stores (storeTurn), so the two commit together; a reply that
 * stores no turn completes it on its own (respondWithoutStoring).
 */
export async function runIdempotently(
  deps: IdempotencyDeps,
  req: IdempotentRequest,
  status: number,
  run: (claim: IdempotencyClaim) => Promise<unknown>,
): Promise<IdempotentResponse> {
  assertValidIdempotencyKey(req.key);
  const ref: IdempotencyKeyRef = { tenantId: req.identity.tenantId, userId: req.identity.userId, key: req.key };
  const claim: IdempotencyClaim = { ref, claimId: randomUUID(), status, completed: false };

  const earlier = await claimOrRead(deps, req, ref, claim.claimId);
  if (earlier) return earlier;

  const stopRenewing = renewWhileRunning(deps, claim);
  let body: unknown;
  try {
    body = await run(claim);
  } catch (err) {
    // A retry took the claim over (this run's renewals failed for a whole lease): the turn was rolled
    // back, and the retry's run answers for the key.
    if (err instanceof ClaimTakenOverError) throw new IdempotencyInProgressError(req.key);
    if (!claim.completed) await release(deps, ref, claim.claimId);
    throw err;
  } finally {
    stopRenewing();
  }
  if (!claim.completed) {
    await release(deps, ref, claim.claimId);
    throw new Error(`${req.route}: an idempotent run returned without completing its claim`);
  }
  return { status, body, replayed: false };
}

/** Renews the claim every third of its lease until stopped; a renewal that fails is tried again at the next tick. */
function renewWhileRunning(deps: IdempotencyDeps, claim: IdempotencyClaim): () => void {
  const timer = setInterval(() => {
    renewIdempotencyClaim(deps.db.asUser(claim.ref), {
      ...claim.ref,
      claimId: claim.claimId,
      now: deps.clock(),
      leaseMs: deps.settings.leaseMs,
    }).catch((err: unknown) => deps.log.warn({ err }, 'renewing the idempotency claim failed; trying again'));
  }, deps.settings.leaseMs / 3);
  timer.unref();
  return () => clearInterval(timer);
}

/** Claims the key (undefined: go ahead and run) or answers from the row that holds it. */
async function claimOrRead(
  deps: IdempotencyDeps,
  req: IdempotentRequest,
  ref: IdempotencyKeyRef,
  claimId: string,
): Promise<IdempotentResponse | undefined> {
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const now = deps.clock();
    const claimed = await claimIdempotencyKey(deps.db.asUser(ref), {
      ...ref,
      route: req.route,
      fingerprint: req.fingerprint,
      claimId,
      now,
      leaseMs: deps.settings.leaseMs,
      ttlMs: deps.settings.ttlMs,
    }).catch(storeUnavailable);
    if (claimed) return undefined;
    const row = await findIdempotencyKey(deps.db.asUser(ref), ref, now).catch(storeUnavailable);
    if (!row) continue; // released or expired since the claim: claim again
    if (row.fingerprint !== req.fingerprint) {
      throw new AppError(
        'idempotency-key-reused',
        `Idempotency-Key "${req.key}" was already used for a different request${row.route === req.route ? '' : ` (${row.route})`}`,
      );
    }
    if (row.status === 'completed') {
      return { status: row.response_status ?? 200, body: row.response_body, replayed: true };
    }
    throw new IdempotencyInProgressError(req.key);
  }
  throw new IdempotencyInProgressError(req.key);
}

/** The keys live in the memory store: when it cannot be reached, the request fails as a turn write does (503, retryable). */
function storeUnavailable(err: unknown): never {
  throw new AppError('memory-store-unavailable', 'the memory store could not be reached; please retry', { cause: err });
}

async function release(deps: IdempotencyDeps, ref: IdempotencyKeyRef, claimId: string) {
  const releaseClaim = () => releaseIdempotencyKey(deps.db.asUser(ref), { ...ref, claimId });
  try {
    await releaseClaim();
  } catch (err) {
    // Until the claim is released a retry answers 409.
    deps.log.error({ err }, 'releasing the idempotency claim failed; retrying it in the background');
    retryInBackground(deps, 'releasing the idempotency claim', releaseClaim);
  }
}

const FIRST_BOOKKEEPING_RETRY_MS = 250;
const MAX_BOOKKEEPING_RETRY_MS = 5000;

/**
 * Releasing a claim that failed because the database was away (a restart, a failover) is retried
 * until it succeeds or the claim's lease ends: retries of the request answer 409 until then, for the
 * database's downtime rather than the whole lease. The claim id fences each attempt: it never touches
 * a claim that was taken over meanwhile.
 */
function retryInBackground(deps: IdempotencyDeps, what: string, write: () => Promise<unknown>): void {
  const giveUpAt = Date.now() + deps.settings.leaseMs;
  let delayMs = FIRST_BOOKKEEPING_RETRY_MS;
  const attempt = () =>
    write().then(
      () => deps.log.warn({}, `${what}: done on a retry`),
      (err: unknown) => {
        if (Date.now() + delayMs >= giveUpAt) deps.log.error({ err }, `${what} failed until the claim's lease ended`);
        else schedule();
      },
    );
  const schedule = () => {
    setTimeout(attempt, delayMs).unref();
    delayMs = Math.min(delayMs * 2, MAX_BOOKKEEPING_RETRY_MS);
  };
  schedule();
}

/**
 * The reply to a request whose turn is not stored (outside the rollout, MEMORY_STORE_OUTSIDE_ROLLOUT=false).
 * With no turn's transaction to carry it, an Idempotency-Key is completed with the reply on its own.
 */
export async function respondWithoutStoring<R>(deps: { db: ScopedDatabase }, claim: IdempotencyClaim | undefined, response: R): Promise<R> {
  if (!claim) return response;
  const completed = await completeIdempotencyKey(deps.db.asUser(claim.ref), {
    ...claim.ref,
    claimId: claim.claimId,
    responseStatus: claim.status,
    responseBody: response,
  }).catch((err: unknown) => {
    throw new AppError('memory-store-unavailable', 'the reply could not be recorded under its Idempotency-Key; please retry', {
      cause: err,
    });
  });
  if (!completed) throw new ClaimTakenOverError(claim.ref.key);
  claim.completed = true;
  return response;
}
