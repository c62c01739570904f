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
  let sum = 0;
  for (const v of vector) sum += v * v;
  if (sum === 0) return null;
  const norm = Math.sqrt(sum);
  return Array.from(vector, (v) => v / norm);
}
