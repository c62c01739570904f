import Type from 'typebox';

/** What a reply built from memory says of today's view permissions (docs/denodo-ai-sdk.md#views-readable-now). */
export const ViewPermissionsFields = {
  view_permissions: Type.Optional(
    Type.Union([Type.Literal('checked'), Type.Literal('unavailable')], {
      description:
        "With an upstream Denodo AI SDK: `checked` when the caller's view permissions were asked with the caller's credentials; `unavailable` when the SDK could not say (a release before 1.2.1, an error, no credentials), and memory was bounded by vdp_database_names and the token's databases only",
    }),
  ),
  left_out_unreadable: Type.Optional(
    Type.Integer({
      minimum: 0,
      description: 'Remembered turns left out because a view they used is not readable by the caller now',
    }),
  ),
};

/** The memory API's header for it: the credentials the SDK is asked with (ANSWER_AUTH=forward). */
export const ViewPermissionsHeaders = Type.Object({
  'x-upstream-authorization': Type.Optional(
    Type.String({
      description:
        'With ANSWER_AUTH=forward: the Denodo credentials the upstream SDK is asked with which views the caller may read now; turns over others are left out',
    }),
  ),
});
