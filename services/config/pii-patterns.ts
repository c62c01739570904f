/** A detector from MEMORY_PII_PATTERNS: a name (the token's label) and its pattern. */
export interface CustomPiiPattern {
  name: string;
  pattern: RegExp;
}

const PATTERN_NAME = /^[a-z][a-z0-9_]{0,31}$/;

/**
 * MEMORY_PII_PATTERNS: a JSON object of `name: regular expression`. Throws a message naming the bad
 * entry: a name that is not a short lowercase label, a pattern that does not compile or matches
 * the empty string (it would mask between every character).
 */
export function parseCustomPiiPatterns(json: string): CustomPiiPattern[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    throw new Error('must be a JSON object of name: regular expression');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('must be a JSON object of name: regular expression');
  return Object.entries(parsed).map(([name, source]) => {
    if (!PATTERN_NAME.test(name)) throw new Error(`"${name}": names are lowercase letters, digits and _ (at most 32)`);
    if (typeof source !== 'string' || source === '') throw new Error(`"${name}": the pattern must be a non-empty string`);
    let pattern: RegExp;
    try {
      pattern = new RegExp(source, 'gu');
    } catch (err) {
      throw new Error(`"${name}": ${(err as Error).message}`);
    }
    if (pattern.test('')) throw new Error(`"${name}": the pattern matches the empty string`);
    return { name, pattern };
  });
}
