import Type from 'typebox';

/**
 * An object with any keys and any values (slots, metadata, a turn's context). Not `Type.Record`: its
 * key pattern `^.*$` does not match a key that holds a line break, and the response serializer drops
 * keys its patterns do not match, so such a slot or metadata key would be stored but never read back.
 */
export function JsonObject(options: { description?: string } = {}) {
  return Type.Unsafe<Record<string, unknown>>({ type: 'object', ...options, additionalProperties: {} });
}
