// The peer: the same memory flow assembled from the LangChain JS parts a team would otherwise use,
// on the same database (its own tables), with the same local embedder and ONE connection.

import { PostgresChatMessageHistory } from '@langchain/community/stores/message/postgres';
import { PGVectorStore } from '@langchain/community/vectorstores/pgvector';
import { Embeddings } from '@langchain/core/embeddings';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import type pg from 'pg';
import { embedText } from '../../services/providers/embeddings/local-embedder.js';
import { type InstantAnswer, turnEmbeddingText } from './data.js';
import { DIMENSIONS, LC_HISTORY_TABLE, LC_VECTOR_TABLE } from './seed.js';

/** The service's local embedder as a LangChain Embeddings class. */
export class LocalHashEmbeddings extends Embeddings {
  constructor() {
    super({});
  }
  async embedDocuments(texts: string[]): Promise<number[][]> {
    return texts.map((t) => embedText(t, DIMENSIONS) ?? new Array<number>(DIMENSIONS).fill(0));
  }
  async embedQuery(text: string): Promise<number[]> {
    return embedText(text, DIMENSIONS) ?? new Array<number>(DIMENSIONS).fill(0);
  }
}

/**
 * The store over a given pool. Not `PGVectorStore.initialize()`: it checks out a pool connection
 * and keeps it, which with the embedded database's single connection would block every query.
 */
export function vectorStore(pool: pg.Pool): PGVectorStore {
  return new PGVectorStore(new LocalHashEmbeddings(), { pool, tableName: LC_VECTOR_TABLE, distanceStrategy: 'cosine' });
}

export async function createLangchainTables(pool: pg.Pool): Promise<void> {
  await vectorStore(pool).ensureTableInDatabase(DIMENSIONS);
  await new PostgresChatMessageHistory({ pool, sessionId: 'init', tableName: LC_HISTORY_TABLE }).getMessages();
}

/** The indexes a team adds once it sees the sequential scans (BENCH-NOTES "with indexes"). */
export async function addLangchainIndexes(pool: pg.Pool): Promise<void> {
  await pool.query(`CREATE INDEX IF NOT EXISTS lc_history_by_session ON ${LC_HISTORY_TABLE} (session_id, id)`);
  await pool.query(`CREATE INDEX IF NOT EXISTS lc_docs_by_user ON ${LC_VECTOR_TABLE} ((metadata->>'user_id'))`);
  await pool.query(`ANALYZE ${LC_HISTORY_TABLE}; ANALYZE ${LC_VECTOR_TABLE}`);
}

export async function dropLangchainIndexes(pool: pg.Pool): Promise<void> {
  await pool.query('DROP INDEX IF EXISTS lc_history_by_session; DROP INDEX IF EXISTS lc_docs_by_user');
}

export interface LangchainTurn {
  userId: string;
  sessionId: string;
  question: string;
  windowTurns: number;
  k: number;
  minSimilarity: number;
  answer: (question: string, context: string) => Promise<InstantAnswer>;
}

/**
 * One turn as a stateless web handler would do it with LangChain: a history object per request
 * (its CREATE TABLE IF NOT EXISTS included), read history, embed and search the user's documents,
 * answer, append the two messages, add the turn as a document.
 */
export async function langchainTurn(pool: pg.Pool, store: PGVectorStore, turn: LangchainTurn): Promise<void> {
  const history = new PostgresChatMessageHistory({ pool, sessionId: turn.sessionId, tableName: LC_HISTORY_TABLE });
  const messages = (await history.getMessages()).slice(-2 * turn.windowTurns);
  const queryVector = await store.embeddings.embedQuery(turn.question);
  const similar = (await store.similaritySearchVectorWithScore(queryVector, turn.k, { user_id: turn.userId })).filter(
    ([, distance]) => 1 - distance >= turn.minSimilarity,
  );
  const context = [
    ...messages.map((m) => `${m.type}: ${String(m.content)}`),
    ...similar.map(([doc]) => `similar: ${doc.pageContent}\nSQL: ${String(doc.metadata.sql_query)}`),
  ].join('\n');
  const answer = await turn.answer(turn.question, context);
  await history.addMessages([new HumanMessage(turn.question), new AIMessage(answer.answer)]);
  await store.addVectors(
    [await store.embeddings.embedQuery(turnEmbeddingText(turn.question, answer))],
    [
      {
        pageContent: turn.question,
        metadata: {
          user_id: turn.userId,
          session_id: turn.sessionId,
          sql_query: answer.sql_query,
          answer: answer.answer,
          tables_used: answer.tables_used,
        },
      },
    ],
  );
}
