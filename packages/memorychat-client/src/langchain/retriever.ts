import { Document } from '@langchain/core/documents';
import { BaseRetriever, type BaseRetrieverInput } from '@langchain/core/retrievers';
import type { MemorychatClient } from '../index.js';
import { problemError } from './chat-message-history.js';

export interface MemorychatRetrieverInput extends BaseRetrieverInput {
  client: MemorychatClient;
  /** How many past turns to return (default 5, at most 50). */
  k?: number;
  /** Search one session only. */
  sessionId?: string;
  /** Leave out turns less similar than this (cosine, -1 to 1; the service's default otherwise). */
  minSimilarity?: number;
  /** Only turns about these Denodo databases. */
  vdpDatabaseNames?: string[];
}

export interface MemorychatTurnMetadata {
  session_id: string;
  session_name: string;
  turn_number: number;
  created_at: string;
  similarity: number;
  question: string;
  sql_query: string | null;
  tables_used: string[];
}

/**
 * The caller's past turns most similar to a query (POST /memory/search) as LangChain documents:
 * the question, its answer and its SQL as the page content, the turn's place and score as metadata.
 */
export class MemorychatRetriever extends BaseRetriever<MemorychatTurnMetadata> {
  lc_namespace = ['memorychat', 'langchain', 'retrievers'];

  private readonly client: MemorychatClient;
  private readonly k: number;
  private readonly sessionId: string | undefined;
  private readonly minSimilarity: number | undefined;
  private readonly vdpDatabaseNames: string[] | undefined;

  constructor({ client, k = 5, sessionId, minSimilarity, vdpDatabaseNames, ...fields }: MemorychatRetrieverInput) {
    super(fields);
    this.client = client;
    this.k = k;
    this.sessionId = sessionId;
    this.minSimilarity = minSimilarity;
    this.vdpDatabaseNames = vdpDatabaseNames;
  }

  override async _getRelevantDocuments(query: string): Promise<Document<MemorychatTurnMetadata>[]> {
    const { data, error } = await this.client.POST('/memory/search', {
      body: {
        query,
        k: this.k,
        ...(this.sessionId ? { session_id: this.sessionId } : {}),
        ...(this.minSimilarity !== undefined ? { min_similarity: this.minSimilarity } : {}),
        ...(this.vdpDatabaseNames ? { vdp_database_names: this.vdpDatabaseNames } : {}),
      },
    });
    if (error) throw problemError('search memory', error);
    return data.results.map(
      (turn) =>
        new Document({
          pageContent: [`Q: ${turn.question}`, `A: ${turn.answer}`, ...(turn.sql_query ? [`SQL: ${turn.sql_query}`] : [])].join('\n'),
          metadata: {
            session_id: turn.session_id,
            session_name: turn.session_name,
            turn_number: turn.turn_number,
            created_at: turn.created_at,
            similarity: turn.similarity,
            question: turn.question,
            sql_query: turn.sql_query,
            tables_used: turn.tables_used,
          },
        }),
    );
  }
}
