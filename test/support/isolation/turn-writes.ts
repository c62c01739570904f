import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { ModelSession, PrincipalModel } from './model.js';
import { KEY_POOL, type TurnWriteOp } from './operations.js';
import { type RunContext, resolveTarget, resultRows, textOf } from './run.js';
import type { Principal } from './world.js';

/** A request that stores a turn, kept whole so a keyed one can be sent again exactly. */
export interface TurnWrite {
  route: TurnWriteOp['kind'];
  path: string;
  /** The session resumed; absent when the request starts one. */
  sessionId?: string;
  body: Record<string, unknown>;
  key?: string;
  question: string;
  /** The name a new session gets. */
  sessionName: string;
  namedByQuestion: boolean;
  hasSql: boolean;
  hasResult: boolean;
  ok: boolean;
}

const lastKeyed = new WeakMap<PrincipalModel, TurnWrite>();

/** What the fake upstream answers to a `/memoryChat` question (test/support/isolation/upstream.ts). */
export function echoAnswer(question: string): string {
  return `You asked: ${question}`;
}

export function buildTurnWrite(run: RunContext, caller: Principal, op: TurnWriteOp): TurnWrite {
  const key = op.key === null ? undefined : op.key === 'fresh' ? `fresh-${randomBytes(8).toString('hex')}` : KEY_POOL[op.key];
  const target = op.kind === 'newTurn' || (op.kind === 'chat' && !op.target) ? undefined : resolveTarget(run, caller, op.target!);
  if (op.kind === 'chat') {
    const question = textOf(caller, op.word, op.clarify ? 'clarify' : 'chat');
    const body = { question, ...(target ? { session_id: target.id } : {}) };
    return {
      route: 'chat',
      path: '/memoryChat',
      sessionId: target?.id,
      body,
      key,
      question,
      sessionName: question,
      namedByQuestion: true,
      hasSql: !op.clarify,
      hasResult: !op.clarify,
      ok: !op.clarify,
    };
  }
  const repeated = op.kind === 'addTurn' && op.repeat ? target?.own?.turns.at(-1)?.question : undefined;
  const question = repeated ?? textOf(caller, op.word, 'turn');
  const named = op.kind === 'newTurn' && op.named ? textOf(caller, op.word, 'named') : undefined;
  const body = {
    question,
    answer: textOf(caller, op.word, 'answer'),
    ...(op.sql ? { sql_query: `SELECT note FROM notes WHERE q = '${question}'` } : {}),
    ...(op.result ? { execution_result: resultRows(question) } : {}),
    ...(named ? { session_name: named } : {}),
  };
  const path = target ? `/sessions/${target.id}/turns` : '/sessions/turns';
  return {
    route: op.kind,
    path,
    sessionId: target?.id,
    body,
    key,
    question,
    sessionName: named ?? question,
    namedByQuestion: named === undefined,
    hasSql: op.sql,
    hasResult: op.result,
    ok: op.sql,
  };
}

/**
 * Sends a turn write and checks the answer against the model: an Idempotency-Key the caller used
 * before replays or conflicts (keys are per user, so another user's use of the same key is
 * irrelevant); otherwise the turn lands in the caller's live session with the next number, or the
 * request answers 404 for any session that is not the caller's live one.
 */
export async function sendTurnWrite(run: RunContext, caller: Principal, write: TurnWrite): Promise<void> {
  const { client } = run;
  const model = run.models[caller.index]!;
  if (write.key) lastKeyed.set(model, write);
  const reply = await client.send(caller, 'POST', write.path, {
    body: write.body,
    headers: write.key ? { 'idempotency-key': write.key } : undefined,
  });
  const what = `P${caller.index} ${write.route} ${write.path}`;
  const fingerprint = `${write.path} ${JSON.stringify(write.body)}`;
  const known = write.key ? model.keys.get(write.key) : undefined;
  if (known) {
    if (known.fingerprint !== fingerprint)
      return client.expectStatus(reply, 422, `${what} with a key used for another request`, 'idempotency-key-reused');
    client.expect(
      reply.status === known.status && reply.headers.get('idempotent-replayed') === 'true' && isDeepStrictEqual(reply.body, known.body),
      () => `${what}: expected the replay of ${JSON.stringify(known.body).slice(0, 300)}, got ${reply.status} ${reply.text.slice(0, 300)}`,
    );
    return;
  }
  let session: ModelSession | undefined;
  if (write.sessionId) {
    session = model.liveSession(write.sessionId);
    if (!session) return client.expectStatus(reply, 404, `${what} into a session that is not the caller's live one`, 'session-not-found');
  }
  client.expectStatus(reply, write.route === 'chat' ? 200 : 201, what);
  const body = reply.body;
  const view = write.route === 'chat' ? body.conversation_metadata : body.session;
  const id: string = write.route === 'chat' ? view.conversation_id : view.session_id;
  if (!session) {
    client.expect(!run.registry.sessions.has(id), () => `${what}: the new session id ${id} was handed out before`);
    run.registry.sessions.set(id, caller.key);
    session = model.addSession(id, write.sessionName, write.namedByQuestion);
  }
  const priorTurns = session.turns.length;
  const similarBound = Math.min(3, model.recallable().filter((t) => t.ok).length);
  const duplicateOf = write.route === 'addTurn' ? model.expectedDuplicateOf(session, write.question, run.dedupWindow) : null;
  const turn = model.addTurn(session, {
    question: write.question,
    hasSql: write.hasSql,
    hasResult: write.hasResult,
    ok: write.ok,
    duplicateOf,
  });
  if (duplicateOf !== null) client.count('near-duplicate stored');
  client.expect(
    id === session.id && view.message_count === session.turns.length && view.session_name === session.name,
    () => `${what}: expected session ${session.id} "${session.name}" with ${session.turns.length} turns, got ${JSON.stringify(view)}`,
  );
  if (write.route === 'chat') {
    const used = body.memory_context_used;
    client.expect(
      body.answer === echoAnswer(write.question) && used.history_messages_count <= priorTurns && used.similar_queries_count <= similarBound,
      () =>
        `${what}: answer or memory counts beyond the caller's own turns (${priorTurns} in the session): ${JSON.stringify({ answer: body.answer, used })}`,
    );
  } else {
    client.expect(
      body.turn.turn_number === turn.number && body.turn.duplicate_of === duplicateOf,
      () => `${what}: expected turn ${turn.number} (duplicate of ${duplicateOf}), got ${JSON.stringify(body.turn)}`,
    );
  }
  if (write.key) model.keys.set(write.key, { fingerprint, status: reply.status, body, sessionId: id });
}

/** Sends the caller's last keyed turn write again, byte for byte, as a client retrying would. */
export async function retryLastKeyed(run: RunContext, caller: Principal): Promise<void> {
  const write = lastKeyed.get(run.models[caller.index]!);
  if (write) await sendTurnWrite(run, caller, write);
}
