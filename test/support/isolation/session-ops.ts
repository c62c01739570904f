import type { ModelSession } from './model.js';
import type { Target } from './operations.js';
import { type RunContext, resolveTarget, textOf } from './run.js';
import type { Principal } from './world.js';

/** Every page of `GET /sessions`: exactly the caller's live sessions, each with its own turn count. */
export async function listAllSessions(run: RunContext, caller: Principal, limit: number): Promise<void> {
  const { client } = run;
  const model = run.models[caller.index]!;
  const listed: { session_id: string; session_name: string; message_count: number }[] = [];
  let cursor: string | null = null;
  do {
    const reply = await client.send(caller, 'GET', `/sessions?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    client.expectStatus(reply, 200, `P${caller.index} GET /sessions`);
    client.expect(reply.body.sessions.length <= limit, () => `P${caller.index} GET /sessions: a page longer than limit ${limit}`);
    listed.push(...reply.body.sessions);
    cursor = reply.body.next_cursor;
    client.expect(
      listed.length <= model.live().length,
      () => `P${caller.index} GET /sessions lists more than the caller's ${model.live().length} live sessions`,
    );
  } while (cursor);
  const expected = model
    .live()
    .map((s) => `${s.id} ${s.name} ${s.turns.length}`)
    .sort();
  const actual = listed.map((s) => `${s.session_id} ${s.session_name} ${s.message_count}`).sort();
  client.expect(
    JSON.stringify(actual) === JSON.stringify(expected),
    () => `P${caller.index} GET /sessions (limit ${limit}): expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`,
  );
}

/** `GET /sessions/{id}`: the caller's live session with exactly its turns, or 404. */
export async function getSession(run: RunContext, caller: Principal, target: Target): Promise<void> {
  const { id, own } = resolveTarget(run, caller, target);
  await checkSession(run, caller, id, own);
}

export async function checkSession(run: RunContext, caller: Principal, id: string, own: ModelSession | undefined): Promise<void> {
  const { client } = run;
  const reply = await client.send(caller, 'GET', `/sessions/${id}`);
  const what = `P${caller.index} GET /sessions/${id}`;
  if (!own) return client.expectStatus(reply, 404, what, 'session-not-found');
  client.expectStatus(reply, 200, what);
  const body = reply.body;
  const expected = own.turns.map((t) => [t.number, t.question, t.duplicateOf]);
  const actual = body.turns.map((t: any) => [t.turn_number, t.question, t.duplicate_of]);
  client.expect(
    body.session_id === id &&
      body.session_name === own.name &&
      body.message_count === own.turns.length &&
      JSON.stringify(actual) === JSON.stringify(expected),
    () =>
      `${what}: expected "${own.name}" with turns ${JSON.stringify(expected)}, got "${body.session_name}" (${body.message_count}) with ${JSON.stringify(actual)}`,
  );
}

export async function renameSession(run: RunContext, caller: Principal, target: Target): Promise<void> {
  const { client } = run;
  const { id, own } = resolveTarget(run, caller, target);
  const name = textOf(caller, 0, 'renamed');
  // Half the sessions (by id) are kept to themselves as they are renamed, so the programs also run
  // with session-scoped conversations (docs/memory-api.md#memory-scope); the others stay shared.
  const scope = id.charCodeAt(0) % 2 ? 'session' : null;
  const reply = await client.send(caller, 'PATCH', `/sessions/${id}`, { body: { session_name: name, memory_scope: scope } });
  const what = `P${caller.index} PATCH /sessions/${id}`;
  if (!own) return client.expectStatus(reply, 404, what, 'session-not-found');
  client.expectStatus(reply, 200, what);
  own.name = name;
  own.namedByQuestion = false;
  own.keptToItself = scope === 'session';
  client.expect(
    reply.body.session_name === name && reply.body.message_count === own.turns.length && reply.body.memory_scope === scope,
    () => `${what}: expected "${name}" with ${own.turns.length} turns, got ${reply.text.slice(0, 300)}`,
  );
}

export async function deleteSession(run: RunContext, caller: Principal, target: Target, mcp = false): Promise<void> {
  const { client } = run;
  const { id, own } = resolveTarget(run, caller, target);
  const reply = mcp
    ? await client.tool(caller, 'forget_session', { session_id: id })
    : await client.send(caller, 'DELETE', `/sessions/${id}`);
  const what = `P${caller.index} ${mcp ? 'MCP forget_session' : 'DELETE'} /sessions/${id}`;
  if (!own) return client.expectStatus(reply, 404, what, 'session-not-found');
  client.expectStatus(reply, mcp ? 200 : 204, what);
  run.models[caller.index]!.forget(own);
  own.live = false;
}

export async function clearSession(run: RunContext, caller: Principal, target: Target): Promise<void> {
  const { client } = run;
  const { id, own } = resolveTarget(run, caller, target);
  const reply = await client.send(caller, 'POST', `/sessions/${id}/clear`);
  const what = `P${caller.index} POST /sessions/${id}/clear`;
  if (!own) return client.expectStatus(reply, 404, what, 'session-not-found');
  client.expectStatus(reply, 200, what);
  run.models[caller.index]!.forget(own);
  own.turns = [];
  client.expect(reply.body.message_count === 0 && reply.body.session_id === id, () => `${what}: ${reply.text.slice(0, 300)}`);
}
