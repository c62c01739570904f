import fc from 'fast-check';
import type { ImpersonatedForm } from './key-ops.js';
import { ADMIN_INDEXES, KEY_USERS, PRINCIPALS_PER_RUN } from './world.js';

/**
 * The operations an isolation run is made of. They name sessions and requests by position
 * (`pick`), resolved when the operation runs against what exists then, so any subsequence of a
 * program (what shrinking tries) is still a meaningful program.
 */

/**
 * `live`/`any` (dead ones too): the caller's own sessions; `neighbour`: another user's of the
 * caller's tenant; `stranger`: another tenant's (the same user id's there too).
 */
export interface Target {
  whose: 'live' | 'any' | 'neighbour' | 'stranger';
  pick: number;
}

/** No Idempotency-Key, a fresh one, or one of the shared pool (by index). */
export type KeyChoice = null | 'fresh' | number;

export type TurnWriteOp =
  | { kind: 'newTurn'; who: number; word: number; sql: boolean; result: boolean; named: boolean; key: KeyChoice }
  | { kind: 'addTurn'; who: number; target: Target; word: number; sql: boolean; result: boolean; repeat: boolean; key: KeyChoice }
  | { kind: 'chat'; who: number; target: Target | null; word: number; clarify: boolean; key: KeyChoice };

export type Op =
  | TurnWriteOp
  | { kind: 'retryKeyed'; who: number }
  | { kind: 'listSessions'; who: number; limit: 3 | 10 | 100 }
  | { kind: 'getSession' | 'rename' | 'clearSession'; who: number; target: Target }
  | { kind: 'deleteSession'; who: number; target: Target; mcp: boolean }
  | { kind: 'search'; who: number; target: Target | null; k: number; mcp: boolean }
  | { kind: 'context'; who: number; target: Target | null; k: number; format: 'text' | 'openai' | 'anthropic'; mcp: boolean }
  | { kind: 'sqlRef'; who: number; target: Target; ref: SqlRefChoice; mcp: boolean }
  | { kind: 'resultCsv'; who: number; target: Target; ref: SqlRefChoice }
  | { kind: 'sqlKeyword'; who: number; target: Target; word: number }
  | { kind: 'export' | 'erase' | 'adminJobs'; who: number }
  | { kind: 'adminExport' | 'adminErase'; who: number; subject: number }
  | { kind: 'peekRequest'; who: number; pick: number }
  | { kind: 'keyImpersonates'; who: number; victim: number; form: ImpersonatedForm };

type SqlRefChoice = 'first' | 'last' | 'previous' | number;

/** Words questions are built from, so keyword recall has something to find (none is a stopword). */
export const WORDS = ['android', 'revenue', 'quota', 'winter', 'pumpkin', 'journey'] as const;

/**
 * Keys of a small pool every user draws from, so different users often send the same key (each
 * must get their own result), and one user reuses a key for another request (422).
 */
export const KEY_POOL = ['key-0', 'key-1', 'key-2', 'key-3'] as const;

/** Stands for "a user id that belongs to nobody" as the subject of an admin request. */
export const GHOST_SUBJECT = PRINCIPALS_PER_RUN;

const who = fc.integer({ min: 0, max: PRINCIPALS_PER_RUN - 1 });
const pick = fc.nat(1000);
const word = fc.nat(WORDS.length - 1);
const key: fc.Arbitrary<KeyChoice> = fc.oneof(
  { weight: 6, arbitrary: fc.constant(null) },
  { weight: 2, arbitrary: fc.constant('fresh' as const) },
  { weight: 2, arbitrary: fc.nat(KEY_POOL.length - 1) },
);
const target: fc.Arbitrary<Target> = fc.record({
  whose: fc.constantFrom('live', 'live', 'live', 'live', 'live', 'live', 'any', 'neighbour', 'stranger'),
  pick,
});
const optionalTarget = fc.option(target, { freq: 3 });
const ref = fc.oneof(fc.constantFrom('first' as const, 'last' as const, 'previous' as const), fc.integer({ min: 1, max: 40 }));
/** Through the MCP server's tool instead of the REST route (docs/mcp.md): the same checks, the same answers. */
const mcp = fc.boolean();
const adminCaller = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...ADMIN_INDEXES) }, { weight: 1, arbitrary: who });

const c = <K extends string>(kind: K) => fc.constant(kind);

export const operation: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 20,
    arbitrary: fc.record({ kind: c('newTurn'), who, word, sql: fc.boolean(), result: fc.boolean(), named: fc.boolean(), key }),
  },
  {
    weight: 40,
    arbitrary: fc.record({ kind: c('addTurn'), who, target, word, sql: fc.boolean(), result: fc.boolean(), repeat: fc.boolean(), key }),
  },
  { weight: 24, arbitrary: fc.record({ kind: c('chat'), who, target: optionalTarget, word, clarify: fc.boolean(), key }) },
  { weight: 8, arbitrary: fc.record({ kind: c('retryKeyed'), who }) },
  { weight: 10, arbitrary: fc.record({ kind: c('listSessions'), who, limit: fc.constantFrom(3 as const, 10 as const, 100 as const) }) },
  { weight: 16, arbitrary: fc.record({ kind: c('getSession'), who, target }) },
  { weight: 6, arbitrary: fc.record({ kind: c('rename'), who, target }) },
  { weight: 5, arbitrary: fc.record({ kind: c('deleteSession'), who, target, mcp }) },
  { weight: 4, arbitrary: fc.record({ kind: c('clearSession'), who, target }) },
  { weight: 18, arbitrary: fc.record({ kind: c('search'), who, target: optionalTarget, k: fc.integer({ min: 1, max: 50 }), mcp }) },
  {
    weight: 18,
    arbitrary: fc.record({
      kind: c('context'),
      who,
      target: optionalTarget,
      k: fc.integer({ min: 0, max: 20 }),
      format: fc.constantFrom('text' as const, 'openai' as const, 'anthropic' as const),
      mcp,
    }),
  },
  { weight: 10, arbitrary: fc.record({ kind: c('sqlRef'), who, target, ref, mcp }) },
  { weight: 8, arbitrary: fc.record({ kind: c('sqlKeyword'), who, target, word }) },
  { weight: 5, arbitrary: fc.record({ kind: c('resultCsv'), who, target, ref }) },
  { weight: 3, arbitrary: fc.record({ kind: c('export'), who }) },
  { weight: 1, arbitrary: fc.record({ kind: c('erase'), who }) },
  { weight: 2, arbitrary: fc.record({ kind: c('adminExport'), who: adminCaller, subject: fc.integer({ min: 0, max: GHOST_SUBJECT }) }) },
  { weight: 1, arbitrary: fc.record({ kind: c('adminErase'), who: adminCaller, subject: fc.integer({ min: 0, max: GHOST_SUBJECT }) }) },
  { weight: 6, arbitrary: fc.record({ kind: c('peekRequest'), who, pick }) },
  { weight: 2, arbitrary: fc.record({ kind: c('adminJobs'), who }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: c('keyImpersonates'),
      who: fc.constantFrom(...KEY_USERS),
      victim: who,
      form: fc.constantFrom<ImpersonatedForm>('jwt-id', 'stored-id', 'key-principal'),
    }),
  },
);

/**
 * Exactly `length` operations per run (so every run does its share of the total), shrinking like
 * a free-length array: a failing program shrinks to the few operations that matter.
 */
export function programOf(length: number): fc.Arbitrary<Op[]> {
  const generated = fc.array(operation, { minLength: length, maxLength: length });
  const shrinkable = fc.array(operation, { maxLength: length });
  return new (class extends fc.Arbitrary<Op[]> {
    generate(mrng: fc.Random, biasFactor: number | undefined) {
      return new fc.Value(generated.generate(mrng, biasFactor).value_, undefined);
    }
    canShrinkWithoutContext(value: unknown): value is Op[] {
      return shrinkable.canShrinkWithoutContext(value);
    }
    shrink(value: Op[], context: unknown) {
      return shrinkable.shrink(value, context);
    }
  })();
}
