import Type, { type Static } from 'typebox';

/** The memory database: embedded under DATA_DIR, or a server at DATABASE_URL. */
export const DatabaseSchema = Type.Object({
  DATA_DIR: Type.String({ minLength: 1, default: './.data' }),
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  DATABASE_POOL_MAX: Type.Integer({ minimum: 1, maximum: 200, default: 10 }),
});

export type DatabaseVariables = Static<typeof DatabaseSchema>;
