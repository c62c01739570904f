/** The default of an exhaustive switch: a new member of the union fails typechecking there instead of falling through. */
export function unreachable(value: never, what: string): never {
  throw new Error(`unknown ${what}: ${String(value)}`);
}
