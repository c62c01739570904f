import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aloneOnTheCluster, CLUSTER_WAIT_MS } from '../../../support/databases/test-database.js';
import { gdprRequestFinished } from '../../../support/service/gdpr-requests.js';
import { seedSession } from '../../../support/service/seed-memory.js';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';

/**
 * On a server, above the largest string a jsonb value can hold (2^28 - 1 bytes): an export built as
 * one jsonb document, or reading the turn with to_jsonb, fails on such a turn. Seeded straight into
 * the database (Postgres compresses the repeated text, so seeding it is quick). The embedded database
 * (PGlite, WebAssembly) took over 150 s for that size, so there the answer is 20 MB: still several
 * export parts, the same code path, but below the jsonb limit.
 */
const answerChars = (t: TestApp) => (t.config.DATABASE_URL ? 270_000_000 : 20_000_000);

describe('the GDPR export of a user with one very large answer', () => {
  let t: TestApp;
  let release: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    release = await aloneOnTheCluster();
    t = await startTestApp();
  }, CLUSTER_WAIT_MS);
  afterAll(async () => {
    await t?.close();
    await release?.();
  });

  it('when one stored answer is very large (on a server, larger than a jsonb string can be), then the export still completes and its download holds the whole answer, streamed in parts', async () => {
    const user = 'large-answer-owner';
    const token = t.token(user);
    const hour = 3_600_000;
    const sessionId = await seedSession(t.admin, { userId: user, turns: 3, expiresAt: new Date(t.clock.now.getTime() + hour) });
    const ANSWER_CHARS = answerChars(t);
    await t.admin.query(`UPDATE turns SET answer = repeat('x', $2) || 'é-end' WHERE user_id = $1 AND session_id = $3 AND turn_number = 2`, [
      user,
      ANSWER_CHARS,
      sessionId,
    ]);

    const accepted = await t.request('POST', '/me/export', { token });
    expect(accepted.status).toBe(202);
    // A job of a minute or more, polled every second: 120 requests a minute leave room for the download.
    const done = await gdprRequestFinished(t, accepted.body.request_id, { token }, { timeoutMs: 150_000, intervalMs: 1_000 });
    expect(done).toMatchObject({ status: 'completed', counts: { sessions: 1, turns: 3 } });
    const parts = await t.admin.query('SELECT count(*)::int AS n FROM gdpr_export_parts WHERE request_id = $1', [accepted.body.request_id]);
    expect(parts.rows[0].n).toBeGreaterThan(1);

    const download = await t.request('GET', done.download_url, { token });
    expect(download.status).toBe(200);
    const turns = download.body.sessions[0].turns;
    expect(turns.map((turn: { turn_number: number }) => turn.turn_number)).toEqual([1, 2, 3]);
    expect(turns[1].answer).toHaveLength(ANSWER_CHARS + 'é-end'.length);
    expect(turns[1].answer.endsWith('xé-end')).toBe(true);
    expect(turns[0]).not.toHaveProperty('embedding');
    expect(turns[0]).not.toHaveProperty('tenant_id');
  }, 240_000);
});
