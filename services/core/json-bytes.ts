/**
 * The size of `value` as JSON in UTF-8 bytes, or `Infinity` as soon as it is known to be over `max`.
 * It walks the value instead of calling JSON.stringify on the whole of it: a hostile answer (a
 * 100 MB cell, five of them) would make that string hundreds of megabytes, or throw RangeError past
 * V8's longest string, only to learn that it is too large. The work done is bounded by `max`.
 */
export function jsonBytesWithin(value: unknown, max: number): number {
  let total = 0;
  const pending: unknown[] = [value];
  while (pending.length) {
    const current = pending.pop();
    total += shallowBytes(current, max - total, pending);
    if (total > max) return Number.POSITIVE_INFINITY;
  }
  return total;
}

/** The bytes `value` adds by itself (punctuation, keys, scalars); its children are pushed to `pending`. */
function shallowBytes(value: unknown, room: number, pending: unknown[]): number {
  switch (typeof value) {
    case 'string':
      // Every character takes at least one byte: a string longer than the room is over without encoding it.
      return value.length > room ? Number.POSITIVE_INFINITY : Buffer.byteLength(JSON.stringify(value));
    case 'number':
    case 'boolean':
    case 'bigint':
      return String(value).length;
    case 'object': {
      if (value === null) return 4;
      if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
        return shallowBytes((value as { toJSON(): unknown }).toJSON(), room, pending);
      }
      if (Array.isArray(value)) {
        for (const item of value) pending.push(item === undefined || typeof item === 'function' ? null : item);
        return 2 + Math.max(0, value.length - 1);
      }
      let bytes = 2;
      let members = 0;
      for (const [key, item] of Object.entries(value)) {
        if (item === undefined || typeof item === 'function') continue;
        bytes += (members++ ? 1 : 0) + (key.length > room ? Number.POSITIVE_INFINITY : Buffer.byteLength(JSON.stringify(key))) + 1;
        if (bytes > room) return Number.POSITIVE_INFINITY;
        pending.push(item);
      }
      return bytes;
    }
    default:
      return 0;
  }
}

/**
 * Whether `value` nests arrays and objects deeper than `maxDepth` levels. Deeper values are refused
 * rather than stored: serialising them (JSON.stringify, the masker, Postgres's jsonb input) recurses
 * once per level and fails past the stack, as a 500 after the answer was already paid for.
 */
export function nestedDeeperThan(value: unknown, maxDepth: number): boolean {
  // Level by level, queueing containers only: an answer's thousands of scalar cells allocate nothing.
  let level: object[] = isContainer(value) ? [value] : [];
  for (let depth = 0; level.length; depth++) {
    if (depth >= maxDepth) return true;
    const next: object[] = [];
    for (const container of level) {
      for (const item of Array.isArray(container) ? container : Object.values(container)) if (isContainer(item)) next.push(item);
    }
    level = next;
  }
  return false;
}

function isContainer(value: unknown): value is object {
  return value !== null && typeof value === 'object';
}
