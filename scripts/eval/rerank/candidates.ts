// What a rerank chooses from, as the eval's replay sees it: the retrieval statement's best
// RERANK_CANDIDATES similar turns for a first question (the best of each set of tables first, as it
// takes its top k), read just before /memoryChat asks it: the same turns, the same search.
import type { Config } from '../../../services/config/config.js';
import { RERANK_CANDIDATES } from '../../../services/core/context/table-links.js';
import { questionSearch } from '../../../services/core/search-terms/lexical-terms.js';
import { retrieveMemory } from '../../../services/db/repositories/memory-retrieval.js';
import type { Queryable } from '../../../services/db/repositories/queryable.js';
import type { Identity } from '../../../services/model/identity.js';
import type { Embedder } from '../../../services/providers/embeddings/embedder.js';
import { tableSetKey } from '../dialogues.js';
import type { RerankCandidate } from './similar-rerank.js';

/** A first question, the tables its gold SQL reads (tableSetKey), and its candidates in the statement's order. */
export interface CandidateRecord {
  database_id: string;
  question: string;
  wanted: string;
  candidates: RerankCandidate[];
  /** The SQL of every turn the user stored before the question, oldest first: what a schema learned from their history sees. */
  history: string[];
}

export async function candidatesBeforeRerank(
  deps: { db: Queryable; embedder: Embedder; config: Pick<Config, 'MEMORY_MIN_SIMILARITY'> },
  identity: Identity,
  question: string,
): Promise<CandidateRecord['candidates']> {
  const [embedding] = await deps.embedder.embed([question]);
  const { similar } = await retrieveMemory(deps.db, {
    identity,
    now: new Date(),
    windowSize: 0,
    k: RERANK_CANDIDATES,
    minSimilarity: deps.config.MEMORY_MIN_SIMILARITY,
    embedding: embedding ?? null,
    embeddingModel: deps.embedder.modelId,
    search: questionSearch(question),
    scope: {},
  });
  return similar.map((t) => ({
    question: t.question,
    sql_query: t.sql_query,
    tables_used: t.tables_used,
    created_at: t.created_at,
    score: t.score,
    tables: tableSetKey(t.sql_query ?? ''),
    session_id: t.session_id,
    turn_number: t.turn_number,
  }));
}
