import { describe, expect, it } from 'vitest';
import { nestedDeeperThan } from '../../../services/core/stored-bounds.js';

/** `depth` arrays or objects, one inside the other, around a scalar. */
function nested(depth: number, as: 'array' | 'object'): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = as === 'array' ? [value] : { v: value };
  return value;
}

describe('nestedDeeperThan', () => {
  it('when arrays or objects nest exactly to the bound, then they pass; one level more, then they are refused', () => {
    for (const as of ['array', 'object'] as const) {
      expect(nestedDeeperThan(nested(64, as), 64)).toBe(false);
      expect(nestedDeeperThan(nested(65, as), 64)).toBe(true);
    }
  });

  it('when the deep branch is the last of many wide scalar ones, then it is still found', () => {
    const rows = Array.from({ length: 1000 }, (_, i) => ({ id: i, name: `row ${i}`, cells: [i, null, 'x'] }));
    expect(nestedDeeperThan({ rows, tail: nested(4, 'object') }, 4)).toBe(true);
    expect(nestedDeeperThan({ rows, tail: nested(3, 'object') }, 4)).toBe(false);
    expect(nestedDeeperThan('text', 0)).toBe(false);
    expect(nestedDeeperThan([], 0)).toBe(true);
  });
});
