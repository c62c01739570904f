import { randomUUID } from 'node:crypto';
import type { PrincipalModel } from './model.js';
import { GHOST_SUBJECT } from './operations.js';
import type { RunContext } from './run.js';
import { type Principal, randomTag } from './world.js';

const POLL_MS = 10;
const JOB_DEADLINE_MS = 30_000;

/** The principal of this run an admin request names: same tenant as the admin, that user id. */
export function adminSubject(run: RunContext, admin: Principal, subject: number): Principal | undefined {
  if (subject === GHOST_SUBJECT) return undefined;
  const userId = run.principals[subject]!.userId;
  return run.principals.find((p) => p.tenantId === admin.tenantId && p.userId === userId);
}

/** Self-service export or erase, waited for through the status route and checked in full. */
export async function selfService(run: RunContext, caller: Principal, action: 'export' | 'erase'): Promise<void> {
  const reply = await run.client.send(caller, action === 'export' ? 'POST' : 'DELETE', action === 'export' ? '/me/export' : '/me');
  await followRequest(run, caller, caller.userId, caller, reply, action);
}

/**
 * An admin export or erase of a user id: it acts in the admin's tenant only (another tenant's user
 * with the same id is untouched), and its counts are that user's, or zero for nobody. Anyone else
 * gets 403.
 */
export async function adminRequest(run: RunContext, caller: Principal, subject: number, action: 'export' | 'erase'): Promise<void> {
  const subjectPrincipal = adminSubject(run, caller, subject);
  const userId = subject === GHOST_SUBJECT ? randomTag('usr') : run.principals[subject]!.userId;
  const reply = await run.client.send(
    caller,
    action === 'export' ? 'POST' : 'DELETE',
    `/admin/users/${userId}${action === 'export' ? '/export' : ''}`,
  );
  if (!caller.admin) return run.client.expectStatus(reply, 403, `P${caller.index} admin ${action} as a non-admin`, 'forbidden');
  await followRequest(run, caller, userId, subjectPrincipal, reply, action);
}

async function followRequest(
  run: RunContext,
  caller: Principal,
  subjectUserId: string,
  subject: Principal | undefined,
  reply: Awaited<ReturnType<RunContext['client']['send']>>,
  action: 'export' | 'erase',
): Promise<void> {
  const { client } = run;
  const what = `P${caller.index} ${action} of ${caller.tenantId}/${subjectUserId}`;
  client.expectStatus(reply, 202, what);
  const id: string = reply.body.request_id;
  client.expect(
    reply.body.subject_user_id === subjectUserId &&
      reply.body.actor_user_id === caller.userId &&
      reply.body.action === action &&
      !run.registry.requests.has(id),
    () => `${what}: ${reply.text.slice(0, 300)}`,
  );
  run.registry.requests.set(id, {
    tenantId: caller.tenantId,
    actorUserId: caller.userId,
    subjectUserId,
    subjectKey: `${caller.tenantId}/${subjectUserId}`,
    action,
  });
  const done = await awaitRequest(run, caller, id);
  const subjectKey = `${caller.tenantId}/${subjectUserId}`;
  const model = subject ? run.models[subject.index] : undefined;
  const exports = model?.liveExports ?? strangerExports(run, subjectKey);
  const live = model?.live() ?? [];
  const turns = model?.liveTurnCount() ?? 0;
  const expected =
    action === 'export'
      ? { sessions: live.length, turns }
      : { turns, sessions: live.length, exports: exports.size, idempotency_keys: model?.keys.size ?? 0 };
  const counts = Object.fromEntries(Object.keys(expected).map((k) => [k, done.counts[k]]));
  client.expect(
    done.status === 'completed' && JSON.stringify(counts) === JSON.stringify(expected),
    () =>
      `${what}: expected completed with ${JSON.stringify(expected)}, got ${done.status} ${JSON.stringify(done.counts)} (${done.error_code})`,
  );
  if (action === 'erase') {
    exports.clear();
    return model?.erase();
  }
  exports.add(id);
  await download(run, caller, id, subjectKey, model);
}

function strangerExports(run: RunContext, subjectKey: string): Set<string> {
  const exports = run.strangerExports.get(subjectKey) ?? new Set<string>();
  run.strangerExports.set(subjectKey, exports);
  return exports;
}

async function awaitRequest(run: RunContext, caller: Principal, id: string): Promise<any> {
  const deadline = Date.now() + JOB_DEADLINE_MS;
  for (;;) {
    const reply = await run.client.send(caller, 'GET', `/gdpr/requests/${id}`);
    run.client.expectStatus(reply, 200, `P${caller.index} GET /gdpr/requests/${id}`);
    if (reply.body.status === 'completed' || reply.body.status === 'failed') return reply.body;
    if (Date.now() > deadline) run.client.mismatch(`GDPR request ${id} still ${reply.body.status} after ${JOB_DEADLINE_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** A finished export holds exactly the subject's live sessions and turns. */
async function download(
  run: RunContext,
  caller: Principal,
  id: string,
  subjectKey: string,
  model: PrincipalModel | undefined,
): Promise<void> {
  const { client } = run;
  const reply = await client.send(caller, 'GET', `/gdpr/requests/${id}/download`, { alsoOwners: [subjectKey] });
  const what = `P${caller.index} download of export ${id} (${subjectKey})`;
  client.expectStatus(reply, 200, what);
  const expected = (model?.live() ?? []).map((s) => `${s.id}:${s.turns.map((t) => t.number).join(',')}`).sort();
  const actual = reply.body.sessions.map((s: any) => `${s.session_id}:${s.turns.map((t: any) => t.turn_number).join(',')}`).sort();
  client.expect(
    `${reply.body.tenant_id}/${reply.body.user_id}` === subjectKey && JSON.stringify(actual) === JSON.stringify(expected),
    () => `${what}: expected ${JSON.stringify(expected)}, got ${reply.body.tenant_id}/${reply.body.user_id} ${JSON.stringify(actual)}`,
  );
}

/**
 * Any GDPR request id handed out so far, from any tenant: its status and download answer only to
 * the subject, the requester and admins of its tenant; to anyone else it does not exist.
 */
export async function peekRequest(run: RunContext, caller: Principal, pick: number): Promise<void> {
  const { client, registry } = run;
  const ids = [...registry.requests.keys()];
  const id = ids.length ? ids[pick % ids.length]! : randomUUID();
  const request = registry.requests.get(id);
  const visible = request !== undefined && registry.canSee(caller, request);
  const status = await client.send(caller, 'GET', `/gdpr/requests/${id}`);
  const download = await client.send(caller, 'GET', `/gdpr/requests/${id}/download`, { alsoOwners: visible ? [request.subjectKey] : [] });
  const what = `P${caller.index} peek at GDPR request ${id}`;
  if (!visible) {
    client.expectStatus(status, 404, what, 'gdpr-request-not-found');
    return client.expectStatus(download, 404, `${what} (download)`, 'gdpr-request-not-found');
  }
  client.expectStatus(status, 200, what);
  client.expect(
    status.body.subject_user_id === request.subjectUserId &&
      status.body.actor_user_id === request.actorUserId &&
      status.body.action === request.action,
    () => `${what}: ${status.text.slice(0, 300)}`,
  );
  if (request.action === 'erase') return client.expectStatus(download, 404, `${what} (download of an erase)`, 'gdpr-request-not-found');
  if (request.subjectKey === caller.key) {
    // The caller's own export: their operations are serialised, so the model knows if it still exists.
    const live = run.models[caller.index]!.liveExports.has(id);
    return client.expectStatus(download, live ? 200 : 410, `${what} (own download)`);
  }
  // Another user's export seen by an admin: the subject may be erasing it right now.
  client.expect(
    [200, 409, 410].includes(download.status),
    () => `${what} (admin download): ${download.status} ${download.text.slice(0, 300)}`,
  );
}

/** The job views are for admins; a failed job anywhere would itself be a finding. */
export async function adminJobs(run: RunContext, caller: Principal): Promise<void> {
  const { client } = run;
  const counts = await client.send(caller, 'GET', '/admin/jobs');
  const failed = await client.send(caller, 'GET', '/admin/jobs/failed');
  if (!caller.admin) {
    client.expectStatus(counts, 403, `P${caller.index} GET /admin/jobs`, 'forbidden');
    return client.expectStatus(failed, 403, `P${caller.index} GET /admin/jobs/failed`, 'forbidden');
  }
  client.expectStatus(counts, 200, `P${caller.index} GET /admin/jobs`);
  client.expectStatus(failed, 200, `P${caller.index} GET /admin/jobs/failed`);
  client.expect(failed.body.jobs.length === 0, () => `a background job failed: ${failed.text.slice(0, 500)}`);
}
