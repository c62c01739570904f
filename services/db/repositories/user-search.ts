import type { Identity } from '../../model/identity.js';
import { param, type SqlFragment } from '../sql.js';
import { vectorParam } from '../vector-param.js';
import { erasureEpoch } from './erasures.js';
import { type CandidateSearch, FUSED_LIST_DEPTH } from './hybrid-rank.js';
import { type PathHint, pathHint } from './path-memory.js';

/** What a request that searches a user's memory says: /memoryChat's retrieval and POST /memory/search alike. */
export interface UserSearchRequest {
  identity: Identity;
  /** The question's embedding; none: no vector candidates. */
  embedding: number[] | null;
  embeddingModel: string;
  /** The question's lexical terms, and as a tsquery literal (services/core/search-terms/lexical-terms.ts); none: vector only. */
  search?: { query: string; terms: string[] } | null;
  k: number;
  /** A turn found by the vector alone must be at least this similar; a lexical match needs no floor. */
  minSimilarity: number;
  /** MEMORY_EXACT_SEARCH_MAX_TURNS (hybrid-rank.ts, fusedCandidates); its default when absent. */
  exactSearchMaxTurns?: number;
  /** hybrid-rank.ts's ANN_ROW_COST when absent; 0 chooses the approximate path by turn count alone. */
  annRowCost?: number;
}

/**
 * The candidate search (hybrid-rank.ts) of a user's request, all but which turns may be found and
 * what is read of them, made once for the two statements that search: with the path the process
 * knows for the user and the statement's expression of their erasure epoch.
 */
export function userCandidateSearch(
  req: UserSearchRequest,
  options: { distributed?: boolean; exactOnly?: boolean },
): Omit<CandidateSearch, 'where' | 'columns'> & { path: { hint: PathHint; epoch: SqlFragment } } {
  const tenant = param(req.identity.tenantId);
  const user = param(req.identity.userId);
  const exactOnly = options.exactOnly ?? false;
  return {
    tenant,
    user,
    vector: param(req.embedding ? vectorParam(req.embedding) : null),
    embeddingModel: req.embeddingModel,
    query: param(req.search?.query ?? null),
    queryTerms: param(req.search?.terms ?? null),
    depth: param(Math.max(req.k, FUSED_LIST_DEPTH)),
    minSimilarity: req.minSimilarity,
    exactSearchMaxTurns: req.exactSearchMaxTurns,
    annRowCost: req.annRowCost,
    distributed: options.distributed,
    exactOnly,
    path: { hint: pathHint(req.identity, req.embeddingModel, req, exactOnly), epoch: erasureEpoch(tenant, user) },
  };
}
