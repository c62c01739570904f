import Type from 'typebox';
import { MAX_ID_CHARS } from '../../model/identity.js';

const View = Type.String({ minLength: 1, maxLength: 512 });

export const PromotePairBody = Type.Object(
  {
    user_id: Type.String({ minLength: 1, maxLength: MAX_ID_CHARS, description: 'The user whose turn becomes a pair' }),
    session_id: Type.String({ format: 'uuid' }),
    turn_number: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }),
  },
  { additionalProperties: false },
);

export const EditPairBody = Type.Object(
  {
    question: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 8000,
        description: "The question rewritten: the tenant's own text, kept when the author is erased",
      }),
    ),
    sql_query: Type.Optional(Type.String({ minLength: 1, maxLength: 100_000, description: 'The corrected SQL' })),
    tables_used: Type.Optional(
      Type.Array(View, { maxItems: 100, description: 'The views the corrected SQL reads (added to use_views when the pair is recalled)' }),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const PairParams = Type.Object({ pair_id: Type.String({ format: 'uuid' }) });

export const PairListQuery = Type.Object({
  retired: Type.Boolean({ default: false, description: 'Also list retired pairs' }),
  limit: Type.Integer({ minimum: 1, maximum: 500, default: 100 }),
});

const At = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

export const VerifiedPair = Type.Object({
  pair_id: Type.String({ format: 'uuid' }),
  question: Type.Union([Type.String(), Type.Null()], {
    description: 'Masked as stored turns are; null once the author of an adopted pair was erased and no admin had rewritten it',
  }),
  sql_query: Type.String(),
  tables_used: Type.Array(Type.String(), { description: "The pair's views" }),
  vdp_database_names: Type.Array(Type.String(), { description: 'Recalled only for requests whose database scope covers these' }),
  vdp_tag_names: Type.Array(Type.String()),
  author_user_id: Type.Union([Type.String(), Type.Null()], { description: 'The user whose turn it came from; null once they were erased' }),
  source: Type.Union([Type.Object({ session_id: Type.String({ format: 'uuid' }), turn_number: Type.Integer() }), Type.Null()]),
  promoted_via: Type.Union([Type.Literal('admin'), Type.Literal('feedback')]),
  promoted_at: Type.String({ format: 'date-time' }),
  adopted_at: At,
  question_edited_at: At,
  sql_edited_at: At,
  retired_at: At,
  negative_feedback: Type.Integer({ description: "Users' down ratings of answers whose memory held this pair" }),
});

export const PromotedPair = Type.Object({ created: Type.Boolean(), pair: VerifiedPair });

export const VerifiedPairList = Type.Object({ verified_pairs: Type.Array(VerifiedPair, { description: 'Newest first' }) });

export const TenantSettingsBody = Type.Object(
  {
    pairs_from_positive_feedback: Type.Boolean({
      description: 'A turn its user rates up, whose SQL ran, becomes a verified pair of the tenant without an admin',
    }),
  },
  { additionalProperties: false },
);
