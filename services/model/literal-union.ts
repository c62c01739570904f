import Type, { type TLiteral, type TSchema, type TUnion } from 'typebox';

type Literals<T extends readonly string[]> = { -readonly [K in keyof T]: TLiteral<T[K]> };

/** The schema of one of a list's names: a list of names and the schemas that accept them cannot drift apart. */
export function literalUnion<const T extends readonly string[]>(names: T): TUnion<Literals<T>> {
  return Type.Union(names.map((name) => Type.Literal(name)) as TSchema[]) as TUnion<Literals<T>>;
}
