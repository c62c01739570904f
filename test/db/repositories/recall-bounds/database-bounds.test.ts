import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeUpstream } from '../../../support/fakes/fake-upstream.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../../support/service/service-with-upstream.js';
import type { TestApp } from '../../../support/service/test-app.js';

/**
 * A turn records the databases it ran against; a request bounded to other databases (by its
 * `vdp_database_names` or the token's databases claim) must not see anything that turn carried:
 * its slots, or a summary that covers it.
 */
describe('database bounds on slots and summaries', () => {
  let upstream: FakeUpstream;
  let t: TestApp;
  let token: string;
  let sessionId: string;

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream({ JWT_DATABASES_CLAIM: 'dbs' }));
    token = t.token('hannah');
    const hr = await t.request('POST', '/sessions/turns', {
      token,
      body: {
        question: 'Salary band of Ada?',
        answer: 'L7',
        vdp_database_names: ['hr_db'],
        context: { employee: 'Ada', salary_band: 'L7' },
      },
    });
    sessionId = hr.body.session.session_id;
    await t.request('POST', `/sessions/${sessionId}/turns`, {
      token,
      body: { question: 'Sales in EMEA?', answer: '12M', vdp_database_names: ['sales_db'], context: { region: 'EMEA', employee: 'Bob' } },
    });
  });
  afterAll(() => stopServiceWithUpstream({ t, upstream }));

  const context = (body: Record<string, unknown>, tok = token) =>
    t.request('POST', '/memory/context', { token: tok, body: { question: 'And in APAC?', session_id: sessionId, ...body } });

  it('when context is bounded to sales_db, then slots set by the hr_db turn never reach it', async () => {
    const bounded = await context({ vdp_database_names: ['sales_db'] });
    expect(bounded.status).toBe(200);
    expect(bounded.body.slots).toEqual({ region: 'EMEA', employee: 'Bob' });
    expect(bounded.body.context_text).not.toContain('L7');

    const claimBounded = await context({}, t.token('hannah', { dbs: ['sales_db'] }));
    expect(claimBounded.body.slots).toEqual({ region: 'EMEA', employee: 'Bob' });

    const hrOnly = await context({ vdp_database_names: 'hr_db' });
    expect(hrOnly.body.slots).toEqual({ employee: 'Ada', salary_band: 'L7' });

    const unbounded = await context({});
    expect(unbounded.body.slots).toEqual({ employee: 'Bob', salary_band: 'L7', region: 'EMEA' });
  });

  it('when a summary covers an hr_db turn, then a sales_db request gets neither the summary nor the hr turn, and sees the sales turn', async () => {
    await t.admin.query(`UPDATE sessions SET summary_text = 'Ada is in salary band L7.', summary_through_turn = 1 WHERE session_id = $1`, [
      sessionId,
    ]);
    const unbounded = await context({});
    expect(unbounded.body.summary).toBe('Ada is in salary band L7.');
    expect(unbounded.body.history_turns).toEqual([2]);

    const bounded = await context({ vdp_database_names: ['sales_db'] });
    expect(bounded.body.summary).toBeNull();
    expect(bounded.body.history_turns).toEqual([2]);
    expect(JSON.stringify(bounded.body)).not.toContain('L7');

    const chat = await t.request('POST', '/memoryChat', {
      token,
      body: { question: 'And in APAC?', session_id: sessionId, vdp_database_names: ['sales_db'] },
    });
    expect(chat.status).toBe(200);
    const sent = JSON.stringify(upstream.lastBody());
    expect(sent).toContain('Sales in EMEA?');
    expect(sent).not.toContain('L7');
    expect(sent).not.toContain('Salary band');
  });
});
