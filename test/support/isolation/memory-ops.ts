import type { ModelSession, ModelTurn, SqlRef } from './model.js';
import { type Target, WORDS } from './operations.js';
import { type ResolvedSession, type RunContext, resolveTarget, textOf } from './run.js';
import type { Principal } from './world.js';

function optionalTarget(run: RunContext, caller: Principal, target: Target | null): ResolvedSession | undefined {
  return target ? resolveTarget(run, caller, target) : undefined;
}

function findTurn(sessions: ModelSession[], sessionId: string, number: number): ModelTurn | undefined {
  return sessions.find((s) => s.id === sessionId)?.turns.find((t) => t.number === number);
}

/**
 * `POST /memory/search`: only the caller's live turns (of the session, when one is named), each
 * with its own question, and as many as the caller's model says: min(k, searchable turns).
 */
export async function search(run: RunContext, caller: Principal, target: Target | null, k: number, mcp = false): Promise<void> {
  const { client } = run;
  const model = run.models[caller.index]!;
  const session = optionalTarget(run, caller, target);
  const body = { query: textOf(caller, k, 'search'), k, ...(session ? { session_id: session.id } : {}) };
  const reply = mcp
    ? await client.tool(caller, 'recall_similar_questions', body)
    : await client.send(caller, 'POST', '/memory/search', { body });
  const what = `P${caller.index} ${mcp ? 'MCP recall_similar_questions' : 'POST /memory/search'} k=${k}${session ? ` in ${session.id}` : ''}`;
  if (session && !session.own) return client.expectStatus(reply, 404, what, 'session-not-found');
  client.expectStatus(reply, 200, what);
  const results: any[] = reply.body.results;
  const expectedCount = Math.min(k, model.searchable(session?.id).length);
  client.expect(results.length === expectedCount, () => `${what}: expected ${expectedCount} results, got ${results.length}`);
  const seen = new Set<string>();
  for (const hit of results) {
    const turn = findTurn(model.live(), hit.session_id, hit.turn_number);
    client.expect(
      turn !== undefined &&
        turn.question === hit.question &&
        (!session || hit.session_id === session.id) &&
        !seen.has(`${hit.session_id}/${hit.turn_number}`),
      () => `${what}: result ${hit.session_id}/${hit.turn_number} "${hit.question}" is not one of the caller's live turns (or repeats)`,
    );
    seen.add(`${hit.session_id}/${hit.turn_number}`);
  }
}

/**
 * `POST /memory/context`: the history is the named session's own turns (ending with its latest),
 * and every related memory is one of the caller's live answered turns, at most k of them.
 */
export async function context(
  run: RunContext,
  caller: Principal,
  target: Target | null,
  k: number,
  format: 'text' | 'openai' | 'anthropic',
  mcp = false,
): Promise<void> {
  const { client } = run;
  const model = run.models[caller.index]!;
  const session = optionalTarget(run, caller, target);
  const asked = { question: textOf(caller, k, 'context'), k, max_tokens: 200_000, ...(session ? { session_id: session.id } : {}) };
  const reply = mcp
    ? await client.tool(caller, 'get_session_context', asked)
    : await client.send(caller, 'POST', '/memory/context', { body: { ...asked, format } });
  const what = `P${caller.index} ${mcp ? 'MCP get_session_context' : 'POST /memory/context'} ${format} k=${k}${session ? ` in ${session.id}` : ''}`;
  if (session && !session.own) return client.expectStatus(reply, 404, what, 'session-not-found');
  client.expectStatus(reply, 200, what);
  const body = reply.body;
  const own = session?.own;
  const numbers = new Set(own?.turns.map((t) => t.number) ?? []);
  const history: number[] = body.history_turns;
  const latest = own?.turns.at(-1)?.number;
  client.expect(
    body.session_id === (own?.id ?? null) &&
      history.every((n, i) => numbers.has(n) && (i === 0 || n > history[i - 1]!)) &&
      (latest === undefined || history.at(-1) === latest),
    () =>
      `${what}: history ${JSON.stringify(history)} is not the session's own turns ${JSON.stringify([...numbers])} ending with the latest`,
  );
  client.expect(body.memories.length <= k, () => `${what}: ${body.memories.length} memories for k=${k}`);
  for (const memory of body.memories) {
    const turn = findTurn(model.live(), memory.session_id, memory.turn_number);
    const inHistory = memory.session_id === own?.id && history.includes(memory.turn_number);
    client.expect(
      turn?.ok === true && turn.question === memory.question && !inHistory,
      () =>
        `${what}: memory ${memory.session_id}/${memory.turn_number} "${memory.question}" is not one of the caller's answered live turns outside the history`,
    );
  }
}

/** SQL recall by reference: the turn the model resolves, or the problem it predicts. */
export async function sqlByRef(run: RunContext, caller: Principal, target: Target, ref: SqlRef, csv: boolean, mcp = false): Promise<void> {
  const { client } = run;
  const model = run.models[caller.index]!;
  const { id, own } = resolveTarget(run, caller, target);
  const path = `/sessions/${id}/turns/${ref}/${csv ? 'result.csv' : 'sql'}`;
  const reply = mcp
    ? await client.tool(caller, 'get_turn_sql', { session_id: id, ref: String(ref) })
    : await client.send(caller, 'GET', path);
  const what = `P${caller.index} ${mcp ? 'MCP get_turn_sql' : 'GET'} ${path}`;
  if (!own) return client.expectStatus(reply, 404, what, 'session-not-found');
  const turn = model.turnByRef(own, ref);
  if (!turn) return client.expectStatus(reply, 404, what, 'turn-not-found');
  if (!turn.hasSql) return client.expectStatus(reply, 404, what, 'turn-has-no-sql');
  if (csv) {
    if (!turn.hasResult) return client.expectStatus(reply, 404, what, 'result-not-stored');
    client.expectStatus(reply, 200, what);
    client.expect(
      reply.text.includes(turn.question) && (reply.headers.get('content-disposition') ?? '').includes(`turn-${turn.number}.csv`),
      () => `${what}: expected the rows of turn ${turn.number} ("${turn.question}"), got ${reply.text.slice(0, 300)}`,
    );
    return;
  }
  client.expectStatus(reply, 200, what);
  client.expect(
    reply.body.session_id === id && reply.body.turn_number === turn.number && reply.body.question === turn.question,
    () => `${what}: expected turn ${turn.number} "${turn.question}", got ${reply.text.slice(0, 300)}`,
  );
}

/** `GET /sessions/{id}/sql?q=`: the latest turn with SQL whose question has the word. */
export async function sqlByKeyword(run: RunContext, caller: Principal, target: Target, wordIndex: number): Promise<void> {
  const { client } = run;
  const model = run.models[caller.index]!;
  const { id, own } = resolveTarget(run, caller, target);
  const word = WORDS[wordIndex % WORDS.length]!;
  const reply = await client.send(caller, 'GET', `/sessions/${id}/sql?q=${word}`);
  const what = `P${caller.index} GET /sessions/${id}/sql?q=${word}`;
  if (!own) return client.expectStatus(reply, 404, what, 'session-not-found');
  const turn = model.turnByKeyword(own, word);
  if (!turn) return client.expectStatus(reply, 404, what, 'turn-not-found');
  client.expectStatus(reply, 200, what);
  client.expect(
    reply.body.turn_number === turn.number && reply.body.question === turn.question,
    () => `${what}: expected turn ${turn.number} "${turn.question}", got ${reply.text.slice(0, 300)}`,
  );
}
