export interface Embedder {
  /** Stored beside each vector as `<model>@<dimensions>`; search compares only equal ids. */
  readonly modelId: string;
  readonly dimensions: number;
  /**
   * One unit-length vector per text, in order (search ranks by inner product, which equals cosine
   * similarity only for unit vectors). A text with nothing to embed gives null.
   */
  embed(texts: string[]): Promise<(number[] | null)[]>;
}

export function l2Normalise(vector: Float64Array | number[]): number[] | null {
  // Indexed loops into a preallocated array: a turn normalises a vector per text it embeds, and the
  // iterator and Array.from's callback cost more than the arithmetic. Same order, same vectors.
  const length = vector.length;
  let sum = 0;
  for (let i = 0; i < length; i++) sum += vector[i]! * vector[i]!;
  if (sum === 0) return null;
  const norm = Math.sqrt(sum);
  const unit = new Array<number>(length);
  for (let i = 0; i < length; i++) unit[i] = vector[i]! / norm;
  return unit;
}
