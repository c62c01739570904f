/**
 * A vector as a binary bind parameter, in pgvector's wire format (vector_recv: int16 dimensions, int16
 * unused, then float4s, big-endian). pg sends a Buffer in binary format, so neither side prints or parses
 * 384 decimal numbers per vector: the text form is ~7.5 KB of doubles that JavaScript formats and
 * Postgres parses on every statement; this is 1.5 KB copied as it is (docs/performance.md).
 */
export function vectorParam(vector: number[]): Buffer {
  const bytes = Buffer.allocUnsafe(4 + 4 * vector.length);
  bytes.writeInt16BE(vector.length, 0);
  bytes.writeInt16BE(0, 2);
  for (let i = 0; i < vector.length; i++) bytes.writeFloatBE(vector[i]!, 4 + 4 * i);
  return bytes;
}
