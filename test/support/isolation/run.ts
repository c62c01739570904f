import { randomBytes, randomUUID } from 'node:crypto';
import type { IsolationClient } from './client.js';
import type { ModelSession, PrincipalModel } from './model.js';
import { type Target, WORDS } from './operations.js';
import { PRINCIPALS_PER_RUN, type Principal, type Registry } from './world.js';

/** One run of the property: its principals, their models, and the shared client and registry. */
export interface RunContext {
  client: IsolationClient;
  registry: Registry;
  principals: Principal[];
  models: PrincipalModel[];
  /** MEMORY_MAX_TURNS_PER_SESSION of the service under test: the dedup window. */
  dedupWindow: number;
  /**
   * Exports an admin made of user ids that are no principal of the admin's tenant (another tenant's
   * user, a ghost), by `tenant/user`: stored, empty, and erased by an erase of that id.
   */
  strangerExports: Map<string, Set<string>>;
}

/** The session an operation aims at, and the caller's own live session of that id, if it is one. */
export interface ResolvedSession {
  id: string;
  own?: ModelSession;
}

/**
 * Whose sessions a `neighbour` or `stranger` target aims at. It is fixed by the program, and the
 * operation runs in that principal's lane too, so which of their sessions exist when it runs is
 * decided by program order, not by timing: a failure replays, and shrinks.
 */
export function victimOf(run: RunContext, caller: Principal, target: Target): Principal | undefined {
  if (target.whose === 'live' || target.whose === 'any') return undefined;
  const others = run.principals.filter((p) => p !== caller && (p.tenantId === caller.tenantId) === (target.whose === 'neighbour'));
  return others[target.pick % Math.max(others.length, 1)];
}

export function resolveTarget(run: RunContext, caller: Principal, target: Target): ResolvedSession {
  const model = run.models[caller.index]!;
  const victim = victimOf(run, caller, target);
  const candidates = victim
    ? run.models[victim.index]!.sessions
    : target.whose === 'live'
      ? model.live()
      : target.whose === 'any'
        ? model.sessions
        : [];
  // The low part of `pick` chose the victim; the rest chooses among their sessions.
  const index = victim ? Math.floor(target.pick / PRINCIPALS_PER_RUN) : target.pick;
  // Nothing to aim at: a session id nobody has, which must answer like any other foreign one.
  const id = candidates.length ? candidates[index % candidates.length]!.id : randomUUID();
  return { id, own: model.liveSession(id) };
}

/**
 * A text of `caller`'s: their marker first (so cut names keep it), a keyword, and two random words
 * that keep distinct texts far below the dedup similarity threshold.
 */
export function textOf(caller: Principal, word: number, what: string): string {
  return `${caller.marker} ${WORDS[word % WORDS.length]} ${what} ${randomWord()} ${randomWord()}`;
}

function randomWord(): string {
  return Array.from(randomBytes(8), (b) => String.fromCharCode(97 + (b % 26))).join('');
}

/** Denodo's old execution_result form, which `result.csv` exports. */
export function resultRows(value: string) {
  return { 'Row 1': [{ columnName: 'note', value }] };
}
