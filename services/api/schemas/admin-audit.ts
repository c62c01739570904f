import Type from 'typebox';
import { MAX_ID_CHARS } from '../../model/identity.js';

const AccessAction = Type.Union(
  [
    Type.Literal('export'),
    Type.Literal('erase'),
    Type.Literal('download'),
    Type.Literal('admin_read'),
    Type.Literal('act_for_user'),
    Type.Literal('pair_promote'),
    Type.Literal('pair_edit'),
    Type.Literal('pair_retire'),
    Type.Literal('pair_adopt'),
    Type.Literal('tenant_settings'),
  ],
  {
    description:
      "export / erase: a GDPR request was made; download: an export was downloaded; admin_read: an admin read another user's request; " +
      'act_for_user: an API key called a route for the user named in X-Memory-User; ' +
      "pair_promote / pair_edit / pair_retire / pair_adopt: an admin acted on a verified pair (the subject is its author); tenant_settings: an admin changed the tenant's settings",
  },
);

export const AdminAuditQuery = Type.Object({
  user_id: Type.Optional(
    Type.String({ minLength: 1, maxLength: MAX_ID_CHARS, description: 'Entries where this user is the subject or the actor' }),
  ),
  action: Type.Optional(AccessAction),
  from: Type.Optional(Type.String({ format: 'date-time', description: 'Entries at or after this time' })),
  to: Type.Optional(Type.String({ format: 'date-time', description: 'Entries before this time' })),
  limit: Type.Integer({ minimum: 1, maximum: 200, default: 50 }),
  cursor: Type.Optional(Type.String({ maxLength: 200 })),
});

export const AdminAuditResponse = Type.Object({
  entries: Type.Array(
    Type.Object({
      entry_id: Type.String({ format: 'uuid' }),
      at: Type.String({ format: 'date-time' }),
      actor_user_id: Type.String(),
      subject_user_id: Type.String(),
      action: AccessAction,
      target: Type.String({ description: 'The GDPR request acted on; for act_for_user, the operationId called' }),
      http_request_id: Type.Union([Type.String(), Type.Null()], { description: 'X-Request-Id of the request that did it' }),
      api_key_id: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], {
        description: 'The API key that made the call (act_for_user); its actor is `api-key:<key id>`',
      }),
    }),
  ),
  next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last' }),
});
