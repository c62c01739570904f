import { randomUUID } from 'node:crypto';
import type { AccessAction } from '../../db/repositories/access-audit.js';
import { readTenantSettings, type TenantSettings, writeTenantSettings } from '../../db/repositories/tenant-settings.js';
import {
  findPair,
  findPairOfTurn,
  insertPairFromTurn,
  listPairs,
  markPair,
  type PairRow,
  type TurnSource,
  updatePair,
} from '../../db/repositories/verified-pairs.js';
import { AppError } from '../../model/errors.js';
import type { Identity } from '../../model/identity.js';
import { type AccessOrigin, recordAccess } from '../audit/access-audit.js';
import type { MemoryDeps } from '../deps.js';
import { turnSearchTerms } from '../search-terms/lexical-terms.js';
import { embeddedTurnText } from '../turns/turn-embedding.js';
import { pairView } from './pair-view.js';

/** The admin routes' collaborators. */
export type PairAdminDeps = Pick<MemoryDeps, 'db' | 'embedder' | 'pii' | 'clock'>;

const asAdmin = (deps: PairAdminDeps, admin: Identity) => deps.db.asUser({ ...admin, tenantAdmin: true });

/**
 * Every admin action on a pair is in the access audit before it is done, its subject the pair's
 * author (the admin themselves once the author is erased), so an erasure pseudonymises it.
 */
function audit(deps: PairAdminDeps, admin: Identity, action: AccessAction, subject: string | null, target: string, origin?: AccessOrigin) {
  return recordAccess(asAdmin(deps, admin), {
    actor: admin,
    subjectUserId: subject ?? admin.userId,
    action,
    target,
    at: deps.clock(),
    origin,
  });
}

/**
 * POST /admin/verified-pairs: a user's answered turn becomes a pair of the tenant. The turn is read
 * and copied in its author's scope (row-level security lets no one else read it), widened to the
 * tenant's admin rights for the write. A turn promoted before gives its live pair back.
 */
export async function promoteTurn(deps: PairAdminDeps, admin: Identity, source: Omit<TurnSource, 'tenantId'>, origin?: AccessOrigin) {
  const turn: TurnSource = { ...source, tenantId: admin.tenantId };
  const author = deps.db.asUser({ tenantId: admin.tenantId, userId: source.userId, tenantAdmin: true });
  const existing = await findPairOfTurn(author, turn);
  if (existing) return { created: false, pair: pairView(existing) };
  const pairId = randomUUID();
  await audit(deps, admin, 'pair_promote', source.userId, pairId, origin);
  const pair = await insertPairFromTurn(author, turn, { pairId, via: 'admin', now: deps.clock() });
  if (!pair) {
    throw new AppError(
      'turn-not-found',
      `user ${source.userId} has no answered turn ${source.turnNumber} with SQL in session ${source.sessionId} (one rated down is not promoted)`,
    );
  }
  return { created: true, pair: pairView(pair) };
}

export async function listTenantPairs(deps: PairAdminDeps, admin: Identity, q: { retired: boolean; limit: number }) {
  return { verified_pairs: (await listPairs(asAdmin(deps, admin), admin.tenantId, q)).map(pairView) };
}

async function foundPair(deps: PairAdminDeps, admin: Identity, pairId: string): Promise<PairRow> {
  const pair = await findPair(asAdmin(deps, admin), admin.tenantId, pairId);
  if (!pair) throw new AppError('not-found', 'this tenant has no such verified pair');
  return pair;
}

export interface PairPatch {
  question?: string;
  sql_query?: string;
  tables_used?: string[];
}

/**
 * PATCH /admin/verified-pairs/{id}: an admin corrects the SQL (and the views it reads) or rewrites the
 * question, masked as stored turns are; a new question is embedded again. A rewritten question is the
 * tenant's, not the author's: it stays when the author is erased.
 */
export async function editPair(deps: PairAdminDeps, admin: Identity, pairId: string, patch: PairPatch, origin?: AccessOrigin) {
  const pair = await foundPair(deps, admin, pairId);
  const sqlQuery = patch.sql_query === undefined ? undefined : (deps.pii.sql(patch.sql_query.trim()) ?? '');
  if (sqlQuery === '') throw new AppError('validation-failed', 'sql_query must not be blank');
  const question = patch.question === undefined ? undefined : deps.pii.text(patch.question.trim());
  if (question === '') throw new AppError('validation-failed', 'question must not be blank');
  const tablesUsed = patch.tables_used ?? pair.tables_used;
  const finalSql = sqlQuery ?? pair.sql_query;
  await audit(deps, admin, 'pair_edit', pair.author_user_id, pairId, origin);
  let embedded: { text: string; embedding: number[] | null; embeddingModel: string } | undefined;
  if (question !== undefined) {
    const [embedding = null] = await deps.embedder
      .embed([embeddedTurnText({ question, sqlQuery: finalSql, tablesUsed, answer: '' })])
      .catch((err: unknown) => {
        throw new AppError('embeddings-unavailable', 'the rewritten question could not be embedded; the pair is unchanged', { cause: err });
      });
    embedded = { text: question, embedding, embeddingModel: deps.embedder.modelId };
  }
  // The terms of a pair whose question was erased stay empty until a question is written.
  const termsQuestion = question ?? pair.question;
  await updatePair(
    asAdmin(deps, admin),
    admin.tenantId,
    pairId,
    {
      ...(embedded ? { question: embedded } : {}),
      ...(sqlQuery !== undefined ? { sqlQuery } : {}),
      tablesUsed,
      searchTerms: termsQuestion === null ? '' : turnSearchTerms({ question: termsQuestion, sqlQuery: finalSql, tablesUsed }),
    },
    deps.clock(),
  );
  return pairView(await foundPair(deps, admin, pairId));
}

/** Retiring stops a pair's recall for good; adopting keeps it through its author's erasure. */
export async function markTenantPair(
  deps: PairAdminDeps,
  admin: Identity,
  pairId: string,
  mark: 'retired' | 'adopted',
  origin?: AccessOrigin,
) {
  const pair = await foundPair(deps, admin, pairId);
  await audit(deps, admin, mark === 'retired' ? 'pair_retire' : 'pair_adopt', pair.author_user_id, pairId, origin);
  await markPair(asAdmin(deps, admin), admin.tenantId, pairId, mark, deps.clock());
  return pairView(await foundPair(deps, admin, pairId));
}

export function tenantSettings(deps: PairAdminDeps, admin: Identity): Promise<TenantSettings> {
  return readTenantSettings(asAdmin(deps, admin), admin.tenantId);
}

export async function changeTenantSettings(deps: PairAdminDeps, admin: Identity, settings: TenantSettings, origin?: AccessOrigin) {
  await audit(deps, admin, 'tenant_settings', null, `pairs_from_positive_feedback=${settings.pairs_from_positive_feedback}`, origin);
  return writeTenantSettings(asAdmin(deps, admin), admin.tenantId, settings, deps.clock());
}
