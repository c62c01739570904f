import Type from 'typebox';

/** The `Idempotency-Key` request header (docs/idempotency.md), for routes that store a turn. */
export const idempotencyKeyHeader = Type.Optional(
  Type.String({
    minLength: 1,
    maxLength: 255,
    pattern: '^[\\x20-\\x7E]+$',
    description:
      'Makes a retry safe: a repeat of the same request with the same key (within IDEMPOTENCY_TTL) replays the ' +
      'first 2xx response with `Idempotent-Replayed: true` instead of running again. 1 to 255 printable ASCII characters.',
  }),
);

export const IdempotencyHeaders = Type.Object({ 'idempotency-key': idempotencyKeyHeader });
