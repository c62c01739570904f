/** `value` rounded to `digits` decimals, as replies show times and similarities. */
export function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
