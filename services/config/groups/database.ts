import Type, { type Static } from 'typebox';

/**
 * How long an idle pooled connection stays open. Its prepared statements go with it: one closed after a
 * pause is opened again, and its first retrievals plan the large statement anew (docs/scaling.md,
 * "Idle connections"). 0 keeps them open.
 */
export const DEFAULT_POOL_IDLE_SECONDS = 600;

/** The memory database: embedded under DATA_DIR, or a server at DATABASE_URL. */
export const DatabaseSchema = Type.Object({
  DATA_DIR: Type.String({ minLength: 1, default: './.data' }),
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  DATABASE_POOL_MAX: Type.Integer({ minimum: 1, maximum: 200, default: 10 }),
  DATABASE_POOL_IDLE_SECONDS: Type.Integer({ minimum: 0, maximum: 86_400, default: DEFAULT_POOL_IDLE_SECONDS }),
  // The embedded database's buffer pool, which PGlite touches whole at start: RSS from the first second.
  // Unset: the database child's own size (db/embedded/pglite-process.mjs, 32 MB on disk).
  EMBEDDED_SHARED_BUFFERS_MB: Type.Optional(Type.Integer({ minimum: 16, maximum: 65_536 })),
});

export type DatabaseVariables = Static<typeof DatabaseSchema>;
