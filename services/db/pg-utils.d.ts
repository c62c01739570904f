// The part of pg's lib/utils (which @types/pg does not declare) that db/user-shard-call.ts uses: the
// text form pg sends a bind value in.
declare module 'pg/lib/utils.js' {
  const utils: { prepareValue(value: unknown): unknown };
  export default utils;
}
