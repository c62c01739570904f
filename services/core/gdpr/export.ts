import {
  appendExportPart,
  beginExport,
  type ExportRef,
  findAuditRow,
  finishExport,
  listSessionsForExport,
  listTurnsForExport,
  markAuditFinished,
  markAuditRunning,
} from '../../db/repositories/gdpr.js';
import type { Queryable } from '../../db/repositories/queryable.js';
import { listPairsOfAuthor } from '../../db/repositories/verified-pairs.js';
import type { ScopedDatabase } from '../../db/row-security.js';
import { type JobLogger, PermanentJobError } from '../job-queue.js';
import { pairView } from '../pairs/pair-view.js';

export interface GdprJobDeps {
  db: ScopedDatabase;
  clock: () => Date;
  log: JobLogger;
}

/** Turns read per statement: a page holds whole turns, so it is kept short. */
const TURN_PAGE = 50;
/** Characters per stored part: a turn larger than this is cut into several parts. */
export const EXPORT_PART_CHARS = 8 * 1024 * 1024;
/** Columns that are not exported: the owner (the document names it once) and what is derived from the exported text. */
const NOT_EXPORTED = ['tenant_id', 'user_id', 'session_id', 'embedding', 'search_terms'];

/**
 * Builds a user's export (docs/design.md §7): every live session with its summary and every turn with its
 * SQL and results, and the verified pairs promoted from their turns, as one JSON document stored in gdpr_exports until GDPR_EXPORT_TTL passes.
 * Expired data is not exported: it is already invisible and awaits deletion.
 *
 * The document is written as it is read, turn by turn, in parts (gdpr_export_parts) that the
 * download sends in order: no value holds the whole document, so one large turn cannot break it
 * (a jsonb value holds at most 256 MB), and the job holds one page of turns at a time.
 */
export async function runGdprExport(
  deps: GdprJobDeps & { exportTtlMs: number },
  job: { tenantId: string; requestId: string },
): Promise<{ sessions: number; turns: number }> {
  // The job knows its request, not yet its subject: the audit row is read and kept across users.
  const jobBookkeeping = deps.db.asMaintenance();
  const audit = await findAuditRow(jobBookkeeping, job.tenantId, job.requestId);
  if (audit?.action !== 'export') throw new PermanentJobError(`no export request ${job.requestId}`);
  if (audit.status === 'completed') return { sessions: audit.counts.sessions ?? 0, turns: audit.counts.turns ?? 0 };
  const now = deps.clock();
  await markAuditRunning(jobBookkeeping, job.tenantId, job.requestId, now);

  const userId = audit.subject_user_id;
  // Everything else acts for the subject only: row-level security confines it to their rows.
  const subject = deps.db.asUser({ tenantId: job.tenantId, userId });
  const ref: ExportRef = { tenantId: job.tenantId, userId, requestId: job.requestId };
  await beginExport(subject, { ...ref, now, expiresAt: new Date(now.getTime() + deps.exportTtlMs) });
  const out = new PartWriter(subject, ref);

  const head = {
    format: 'memorychat-export/1',
    request_id: job.requestId,
    tenant_id: job.tenantId,
    user_id: userId,
    generated_at: now.toISOString(),
  };
  await out.write(`${JSON.stringify(head).slice(0, -1)},"sessions":[`);
  const sessions = await listSessionsForExport(subject, job.tenantId, userId, now);
  let turnCount = 0;
  for (const [i, session] of sessions.entries()) {
    await out.write(`${i ? ',' : ''}${JSON.stringify(session.session).slice(0, -1)},"turns":[`);
    for (let after = 0, first = true; ; ) {
      const page = await listTurnsForExport(subject, job.tenantId, userId, session.session_id, after, TURN_PAGE);
      for (const row of page) {
        await out.write(`${first ? '' : ','}${exportedTurn(row.turn)}`);
        first = false;
      }
      turnCount += page.length;
      if (page.length < TURN_PAGE) break;
      after = page.at(-1)!.turn_number;
    }
    await out.write(']}');
  }
  // The tenant's verified pairs promoted from the user's turns (docs/verified-pairs.md), while they name the user.
  const pairs = (await listPairsOfAuthor(subject, job.tenantId, userId)).map(pairView);
  await out.write(`],"verified_pairs":${JSON.stringify(pairs)}}`);
  await out.end();
  await finishExport(subject, ref, turnCount);
  const counts = { sessions: sessions.length, turns: turnCount };
  await markAuditFinished(jobBookkeeping, job.tenantId, job.requestId, { status: 'completed', now: deps.clock(), counts });
  deps.log.info({ ...counts, parts: out.parts }, 'export finished');
  return counts;
}

/** A turn's row as exported: every column (those added later too) but the ones not exported. */
function exportedTurn(rowJson: string): string {
  const turn = JSON.parse(rowJson) as Record<string, unknown>;
  for (const column of NOT_EXPORTED) delete turn[column];
  return JSON.stringify(turn);
}

/** Writes the document's text in parts of at most EXPORT_PART_CHARS, numbered from 0. */
class PartWriter {
  parts = 0;
  private buffer = '';

  constructor(
    private readonly db: Queryable,
    private readonly ref: ExportRef,
  ) {}

  async write(text: string): Promise<void> {
    this.buffer += text;
    while (this.buffer.length >= EXPORT_PART_CHARS) {
      // A cut between the two halves of a surrogate pair would store two halves that are not text.
      const cut = isHighSurrogate(this.buffer.charCodeAt(EXPORT_PART_CHARS - 1)) ? EXPORT_PART_CHARS - 1 : EXPORT_PART_CHARS;
      await this.flush(this.buffer.slice(0, cut));
      this.buffer = this.buffer.slice(cut);
    }
  }

  async end(): Promise<void> {
    if (this.buffer) await this.flush(this.buffer);
    this.buffer = '';
  }

  private async flush(body: string): Promise<void> {
    await appendExportPart(this.db, this.ref, this.parts, body);
    this.parts += 1;
  }
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
