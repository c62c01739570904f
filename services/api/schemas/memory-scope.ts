import Type from 'typebox';

/** docs/memory-api.md#memory-scope */
export const MemoryScopeField = Type.Union([Type.Literal('user'), Type.Literal('session')], {
  default: 'user',
  description:
    "Where memory comes from: `user` also recalls the user's similar questions of other sessions; `session` keeps to this conversation (a new one starts with no memory)",
});
