// What the rerank costs a retrieval, as the eval's replay sees it (`npm run eval -- --rerank-cost`):
// the retrieval statement cut to k by the database, as before the rerank, against the statement's
// best RERANK_CANDIDATES cut to k by table-links.ts, with the same embedding, alternating which runs
// first, REPEATS times each per question. The embedding, which both share, is left out of both.
import type { Config } from '../../../services/config/config.js';
import { RERANK_CANDIDATES, rerankByTableLinks } from '../../../services/core/context/table-links.js';
import { questionSearch } from '../../../services/core/search-terms/lexical-terms.js';
import { retrieveMemory } from '../../../services/db/repositories/memory-retrieval.js';
import type { Queryable } from '../../../services/db/repositories/queryable.js';
import type { Identity } from '../../../services/model/identity.js';
import type { Embedder } from '../../../services/providers/embeddings/embedder.js';

const REPEATS = 3;

export async function rerankCost(
  deps: { db: Queryable; embedder: Embedder; config: Pick<Config, 'MEMORY_MIN_SIMILARITY' | 'MEMORY_SEMANTIC_SEARCH_K'> },
  identity: Identity,
  question: string,
): Promise<{ statementCut: number[]; rerankCut: number[] }> {
  const [embedding] = await deps.embedder.embed([question]);
  const k = deps.config.MEMORY_SEMANTIC_SEARCH_K;
  const read = (limit: number) =>
    retrieveMemory(deps.db, {
      identity,
      now: new Date(),
      windowSize: 0,
      k: limit,
      minSimilarity: deps.config.MEMORY_MIN_SIMILARITY,
      embedding: embedding ?? null,
      embeddingModel: deps.embedder.modelId,
      search: questionSearch(question),
      scope: {},
    });
  const timed = async (f: () => Promise<unknown>) => {
    const started = performance.now();
    await f();
    return performance.now() - started;
  };
  const statementCut: number[] = [];
  const rerankCut: number[] = [];
  for (let i = 0; i < 2 * REPEATS; i++) {
    const runs = [
      async () => statementCut.push(await timed(() => read(k))),
      async () => rerankCut.push(await timed(async () => rerankByTableLinks(question, (await read(RERANK_CANDIDATES)).similar, k))),
    ];
    for (const run of i % 2 ? runs.reverse() : runs) await run();
  }
  return { statementCut, rerankCut };
}
