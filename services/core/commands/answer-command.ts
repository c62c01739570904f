import { clearSession, getSessionWithTurns, updateSession } from '../../db/repositories/sessions.js';
import { findSqlTurn, type SqlTurnLookup } from '../../db/repositories/turns.js';
import { unreachable } from '../../model/unreachable.js';
import type { MemoryDeps } from '../deps.js';
import { executionResultToCsv } from '../recall/result-csv.js';
import { containsPattern } from '../recall/turn-refs.js';
import type { TurnScope } from '../turns/turn-scope.js';
import type { CommandTarget, MemoryCommand, MemoryCommandName } from './recognise.js';

/** A CSV this long or shorter is sent inline with its link. */
const INLINE_CSV_CHARS = 8192;

export interface CommandOutcome {
  answer: string;
  /** The recalled SQL, shown in the reply's `sql_query` (null when there is none); the command's own turn stores none. */
  sqlQuery: string | null;
  tablesUsed: string[];
  /** `memory_command` of the reply: the command's name and what it found. */
  details: { name: MemoryCommandName } & Record<string, unknown>;
}

/**
 * A memory command answered from the scope's session's stored turns (docs/memory-api.md, "Memory
 * commands"), without the answerer. The scope has no session for a message that starts a
 * conversation: there is nothing to recall yet. Runs before the command's own turn is stored.
 */
export async function answerMemoryCommand(
  deps: Pick<MemoryDeps, 'db' | 'settings'>,
  scope: Pick<TurnScope, 'identity' | 'now' | 'sessionId'>,
  command: MemoryCommand,
): Promise<CommandOutcome> {
  const { identity, now, sessionId } = scope;
  const db = deps.db.asUser(identity);
  switch (command.name) {
    case 'forget': {
      const cleared = sessionId
        ? await clearSession(db, identity, sessionId, { now, ttlMs: deps.settings.ttlMs, ttlMode: deps.settings.ttlMode })
        : undefined;
      return {
        answer: cleared
          ? 'Done: I have forgotten this conversation. Ask a new question whenever you like.'
          : 'There was nothing to forget yet.',
        sqlQuery: null,
        tablesUsed: [],
        details: { name: 'forget', cleared: Boolean(cleared) },
      };
    }
    case 'memory_scope': {
      // A conversation's first message has no session yet: the turn stored for it makes one with this scope (chat-command.ts).
      if (sessionId) {
        await updateSession(
          db,
          identity,
          sessionId,
          { memoryScope: command.scope },
          {
            now,
            ttlMs: deps.settings.ttlMs,
            ttlMode: deps.settings.ttlMode,
          },
        );
      }
      return {
        answer:
          command.scope === 'session'
            ? 'Done: this conversation now keeps to itself. I will not use your other conversations here, and they will not use this one.'
            : 'Done: this conversation now also draws on your other conversations, and they on it.',
        sqlQuery: null,
        tablesUsed: [],
        details: { name: 'memory_scope', memory_scope: command.scope },
      };
    }
    case 'recall': {
      const found = sessionId ? await getSessionWithTurns(db, identity, sessionId, now) : undefined;
      const turns = (found?.turns ?? []).filter((t) => t.status !== 'memory_command' && t.status !== 'incomplete');
      const questions = turns.map((t) => ({ turn_number: t.turn_number, question: t.question, sql_query: t.sql_query || null }));
      // The reply's sql_query is the conversation's latest SQL, which a follow-up would build on.
      const latest = turns.filter((t) => t.sql_query).at(-1);
      return {
        answer: questions.length
          ? `Your questions in this conversation:\n${questions.map(listedQuestion).join('\n')}`
          : 'You have not asked anything in this conversation yet.',
        sqlQuery: latest?.sql_query ?? null,
        tablesUsed: latest?.tables_used ?? [],
        details: { name: 'recall', questions },
      };
    }
    case 'show_sql':
    case 'export_csv': {
      const turn = sessionId ? (await findSqlTurn(db, identity, sessionId, now, lookupOf(command.target))).turn : undefined;
      if (!turn?.has_sql) {
        return {
          answer: turn
            ? `Question ${turn.turn_number} ("${turn.question}") was answered without SQL.`
            : `I found no earlier question with SQL ${describe(command.target)} in this conversation.`,
          sqlQuery: null,
          tablesUsed: [],
          details: { name: command.name, found: false, ...(turn ? { turn_number: turn.turn_number } : {}) },
        };
      }
      const about = { turn_number: turn.turn_number, question: turn.question };
      if (command.name === 'show_sql') {
        return {
          answer: `The SQL for question ${turn.turn_number} ("${turn.question}"):\n\n\`\`\`sql\n${turn.sql_query}\n\`\`\``,
          sqlQuery: turn.sql_query,
          tablesUsed: turn.tables_used,
          details: { name: 'show_sql', found: true, ...about, sql_query: turn.sql_query },
        };
      }
      const csvUrl = `/sessions/${sessionId}/turns/${turn.turn_number}/result.csv`;
      const csv = executionResultToCsv(turn.execution_result);
      const inline = csv !== undefined && csv.length <= INLINE_CSV_CHARS ? csv : undefined;
      return {
        answer: csv
          ? `The results of question ${turn.turn_number} ("${turn.question}") as CSV: ${csvUrl}`
          : `Question ${turn.turn_number} ("${turn.question}") has no stored result rows; ${csvUrl}?fresh=true runs its SQL again.`,
        sqlQuery: turn.sql_query,
        tablesUsed: turn.tables_used,
        details: {
          name: 'export_csv',
          found: true,
          ...about,
          csv_url: csvUrl,
          has_stored_result: csv !== undefined,
          ...(inline ? { csv: inline } : {}),
        },
      };
    }
    default:
      return unreachable(command, 'memory command');
  }
}

function listedQuestion(q: { turn_number: number; question: string; sql_query: string | null }): string {
  return q.sql_query ? `${q.turn_number}. ${q.question}\n   SQL: ${q.sql_query}` : `${q.turn_number}. ${q.question}`;
}

function lookupOf(target: CommandTarget): SqlTurnLookup {
  return 'ref' in target ? target.ref : { keywords: target.keywords.map(containsPattern) };
}

function describe(target: CommandTarget): string {
  if ('keywords' in target) return `about ${target.keywords.join(', ')}`;
  if ('number' in target.ref) return `numbered ${target.ref.number}`;
  return `(${target.ref.position})`;
}
