import { l2Normalise, type Embedder } from './embedder.js';

const WORD_WEIGHT = 1;
const WORD_PAIR_WEIGHT = 0.5;
const CHAR_GRAM_WEIGHT = 0.35;

/**
 * Deterministic, offline embeddings: signed feature hashing of words, adjacent word pairs and
 * character 2- and 3-grams, L2-normalised. Character grams make it work for scripts without
 * spaces (Chinese, Japanese) and for inflections ("region" ~ "regions").
 */
export function createLocalEmbedder(model: string, dimensions: number): Embedder {
  return {
    modelId: `${model}@${dimensions}`,
    dimensions,
    async embed(texts) {
      return texts.map((text) => embedText(text, dimensions));
    },
  };
}

export function embedText(text: string, dimensions: number): number[] | null {
  const vector = new Float64Array(dimensions);
  const add = (feature: string, weight: number) => {
    const hash = fnv1a(feature);
    const sign = hash & 1 ? -1 : 1;
    vector[(hash >>> 1) % dimensions]! += sign * weight;
  };
  const words = text.normalize('NFKC').toLowerCase().match(/[\p{L}\p{M}\p{N}_]+/gu) ?? [];
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    add(`w:${word}`, WORD_WEIGHT);
    if (i > 0) add(`p:${words[i - 1]} ${word}`, WORD_PAIR_WEIGHT);
    const padded = [...`^${word}$`];
    for (const n of [2, 3]) {
      for (let j = 0; j + n <= padded.length; j++) add(`c:${padded.slice(j, j + n).join('')}`, CHAR_GRAM_WEIGHT);
    }
  }
  return l2Normalise(vector);
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
