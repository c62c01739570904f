const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

export const DURATION_PATTERN = '^\\s*\\d+(\\.\\d+)?\\s*(ms|s|m|h|d|w)\\s*$';

/** Parses durations such as `7d`, `30m`, `1.5h`, `500ms` into milliseconds. */
export function parseDurationMs(text: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)\s*$/.exec(text);
  if (!match) throw new Error(`not a duration: "${text}" (use e.g. 30m, 1h, 7d)`);
  return Math.round(Number(match[1]) * UNIT_MS[match[2]!]!);
}
