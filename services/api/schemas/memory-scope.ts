import Type from 'typebox';

/** docs/memory-api.md#memory-scope. No schema default: without one, the session's stored scope applies. */
export const MemoryScopeField = Type.Union([Type.Literal('user'), Type.Literal('session')], {
  description:
    "Where this request's memory comes from: `user` also recalls the user's similar questions of other sessions; `session` keeps to " +
    "this conversation (a new one starts with no memory). Without it, the session's stored scope, else `user`. A request that " +
    "creates a session stores its scope as the session's.",
});

/** A session's stored scope; null: the default, `user`. */
export const SessionMemoryScope = Type.Union([Type.Literal('user'), Type.Literal('session'), Type.Null()], {
  description:
    "The scope the session keeps (a request's `memory_scope` overrides it for that request); `session` also keeps the " +
    "conversation out of the user's other sessions' recall. null: the default, `user`",
});
