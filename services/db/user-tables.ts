/**
 * Every table that holds a user's id (or a digest of it), and what erasure and retention do with its
 * rows. Erasure (core/gdpr/erase.ts), the reclaim of erased rows (row-security.ts) and retention
 * (core/jobs/retention-cleanup.ts) take their tables from here, each with a step per table its type
 * asks for; test/db/user-tables.test.ts fails when a table with a user column is not listed.
 */
export const USER_TABLES = {
  turns: { erasure: 'deleted', retention: 'deleted' },
  sessions: { erasure: 'deleted', retention: 'deleted' },
  gdpr_exports: { erasure: 'deleted', retention: 'deleted' },
  // ON DELETE CASCADE from its export.
  gdpr_export_parts: { erasure: 'with its parent', retention: 'with its parent' },
  idempotency_keys: { erasure: 'deleted', retention: 'deleted' },
  linked_identities: { erasure: 'deleted', retention: 'deleted' },
  // Jobs held for the queue: erasure removes the user's with their queued jobs; the relay deletes each once queued.
  job_outbox: { erasure: 'deleted', retention: 'relayed' },
  // The record of who read the user's memory: the user's id becomes the pseudonym the logs use.
  access_audit: { erasure: 'pseudonymised', retention: 'deleted' },
  // The record of GDPR requests: it outlives the erasure it records, with counts only.
  gdpr_audit: { erasure: 'kept', retention: 'kept' },
  // A tenant's verified pairs (migration 023): the author's are deleted, but an adopted pair is kept
  // without its author, its source turn, and the question they wrote unless an admin rewrote it.
  verified_pairs: { erasure: 'deleted unless adopted', retention: 'kept' },
  // Down ratings of answers that used a pair: ON DELETE CASCADE from the rated turn.
  verified_pair_feedback: { erasure: 'with its parent', retention: 'with its parent' },
  // The erasure barrier: a digest of the id, kept so that a request begun before the erasure stores nothing.
  erasures: { erasure: 'kept', retention: 'kept' },
} as const satisfies Record<string, { erasure: Erasure; retention: Retention }>;

type Erasure = 'deleted' | 'deleted unless adopted' | 'with its parent' | 'pseudonymised' | 'kept';
type Retention = 'deleted' | 'with its parent' | 'relayed' | 'kept';

export type UserTable = keyof typeof USER_TABLES;
type Where<K extends 'erasure' | 'retention', V> = {
  [T in UserTable]: (typeof USER_TABLES)[T][K] extends V ? T : never;
}[UserTable];
/** The tables whose user rows an erasure deletes (or strips of the user), each by a step of its own. */
export type ErasedTable = Where<'erasure', 'deleted' | 'deleted unless adopted'>;
/** The tables whose rows retention deletes when they expire, each by a step of its own. */
export type ExpiringTable = Where<'retention', 'deleted'>;

/** Every table an erasure deletes from or rewrites: their space is reclaimed after it. */
export const RECLAIMED_AFTER_ERASURE: readonly UserTable[] = (Object.keys(USER_TABLES) as UserTable[]).filter(
  (table) => USER_TABLES[table].erasure !== 'kept',
);

/** The columns that name a user, by which the check finds the tables of this list. */
export const USER_COLUMNS = ['user_id', 'subject_user_id', 'actor_user_id', 'user_digest', 'author_user_id'] as const;
