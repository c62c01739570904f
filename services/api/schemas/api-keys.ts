import Type from 'typebox';

const Name = Type.String({ minLength: 1, maxLength: 200, description: 'What the key is for, e.g. "slack-bot"' });

export const NewApiKeyBody = Type.Object(
  {
    name: Name,
    act_for_users: Type.Boolean({
      default: false,
      description: 'May act for the end users named in X-Memory-User whose ids start with user_namespace',
    }),
    user_namespace: Type.Optional(
      Type.String({
        minLength: 2,
        maxLength: 200,
        description:
          'Required with act_for_users: the prefix of the user ids the key may act for, ending with ":" (e.g. "slack:T123:"). Their memory is apart from JWT users\' memory',
      }),
    ),
    databases: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 256 }), {
        minItems: 1,
        maxItems: 100,
        description: "Bounds the memory the key uses to these databases, as a JWT's databases claim does; absent: no bound",
      }),
    ),
    routes: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
        minItems: 1,
        maxItems: 100,
        description: 'The operationIds the key may call (e.g. memoryChat, listSessions); absent: every route a user may call',
      }),
    ),
  },
  { additionalProperties: false },
);

const ApiKeyFields = {
  key_id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  act_for_users: Type.Boolean(),
  user_namespace: Type.Union([Type.String(), Type.Null()], { description: 'null: the key acts for no user' }),
  databases: Type.Union([Type.Array(Type.String()), Type.Null()]),
  routes: Type.Union([Type.Array(Type.String()), Type.Null()]),
  created_at: Type.String({ format: 'date-time' }),
  revoked_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
};

export const ApiKey = Type.Object(ApiKeyFields);

export const CreatedApiKey = Type.Object({
  ...ApiKeyFields,
  api_key: Type.String({ description: 'The key, for the X-Api-Key header. Shown this once: only its hash is stored' }),
});

export const ApiKeyList = Type.Object({ api_keys: Type.Array(ApiKey, { description: 'Newest first, revoked ones included' }) });

export const ApiKeyParams = Type.Object({ key_id: Type.String({ format: 'uuid' }) });
