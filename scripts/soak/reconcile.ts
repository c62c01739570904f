// After the soak: what the database holds against what the service acknowledged, exactly.
import pg from 'pg';
import type { LogicalRequest } from './soak-client.js';

export interface StoredTurn {
  user_id: string;
  session_id: string;
  turn_number: number;
  question: string;
}

export interface StoredSession {
  user_id: string;
  session_id: string;
  turn_count: number;
  last_turn_number: number;
}

export interface Reconciliation {
  /** Turn rows of the soak's tenant. */
  stored: number;
  acknowledged: number;
  /** Acknowledged requests whose turn is not stored. */
  lost: number;
  /** Turns stored beyond the first for an acknowledged request. */
  duplicated: number;
  /** Acknowledged turns stored in another session or under another number than the service said. */
  misplaced: number;
  /** Turns of requests that were never acknowledged (rejected or unfinished), or of no request at all. */
  unacknowledgedStored: number;
  /** Sessions whose turn_count or last_turn_number disagree with their turn rows, or with a gap in 1..n. */
  inconsistentSessions: number;
  /** The first few of the above, described, for diagnosis. */
  anomalies: string[];
}

export async function readStoredTurns(databaseUrl: string, tenantId: string): Promise<{ turns: StoredTurn[]; sessions: StoredSession[] }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    // The server's login is a superuser, so row-level security does not hide rows from this audit.
    const turns = await client.query<StoredTurn>(
      'SELECT user_id, session_id::text, turn_number, question FROM turns WHERE tenant_id = $1',
      [tenantId],
    );
    const sessions = await client.query<StoredSession>(
      'SELECT user_id, session_id::text, turn_count, last_turn_number FROM sessions WHERE tenant_id = $1',
      [tenantId],
    );
    return { turns: turns.rows, sessions: sessions.rows };
  } finally {
    await client.end();
  }
}

export function reconcile(requests: LogicalRequest[], turns: StoredTurn[], sessions: StoredSession[]): Reconciliation {
  const byQuestion = new Map<string, StoredTurn[]>();
  for (const t of turns) byQuestion.set(t.question, [...(byQuestion.get(t.question) ?? []), t]);

  let lost = 0;
  let duplicated = 0;
  let misplaced = 0;
  let acknowledged = 0;
  const anomalies: string[] = [];
  const describe = (r: LogicalRequest, found: StoredTurn[], what: string) =>
    anomalies.push(
      `${what}: key ${r.key} (${r.route}, ${r.outcome}, ${r.attempts} attempts, acknowledged as session ${r.sessionId ?? '-'} ` +
        `turn ${r.turnNumber ?? '-'}${r.resentAnswer ? `, resent: ${r.resentAnswer}` : ''}) stored as ` +
        `[${found.map((t) => `${t.session_id} turn ${t.turn_number}`).join(', ')}]`,
    );
  for (const r of requests) {
    const found = byQuestion.get(r.question) ?? [];
    byQuestion.delete(r.question);
    if (r.outcome !== 'acknowledged') {
      if (found.length) describe(r, found, 'stored without acknowledgement');
      continue;
    }
    acknowledged++;
    if (found.length === 0) {
      lost++;
      describe(r, found, 'lost');
    }
    if (found.length > 1) {
      duplicated += found.length - 1;
      describe(r, found, 'duplicated');
    }
    const t = found[0];
    if (t && (t.session_id !== r.sessionId || (r.turnNumber !== undefined && t.turn_number !== r.turnNumber))) {
      misplaced++;
      describe(r, found, 'misplaced');
    }
  }
  for (const [question, found] of byQuestion) anomalies.push(`stored by no request: "${question}" ×${found.length}`);
  const acknowledgedQuestions = new Set(requests.filter((r) => r.outcome === 'acknowledged').map((r) => r.question));
  const unacknowledgedStored = turns.filter((t) => !acknowledgedQuestions.has(t.question)).length;

  const numbers = new Map<string, number[]>();
  for (const t of turns) numbers.set(t.session_id, [...(numbers.get(t.session_id) ?? []), t.turn_number]);
  const inconsistentSessions = sessions.filter((s) => {
    const n = (numbers.get(s.session_id) ?? []).sort((a, b) => a - b);
    return s.turn_count !== n.length || s.last_turn_number !== n.length || n.some((x, i) => x !== i + 1);
  }).length;

  return {
    stored: turns.length,
    acknowledged,
    lost,
    duplicated,
    misplaced,
    unacknowledgedStored,
    inconsistentSessions,
    anomalies: anomalies.slice(0, 20),
  };
}
