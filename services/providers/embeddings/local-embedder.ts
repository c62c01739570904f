import { forEachSegment } from '../../model/text-segments.js';
import { type Embedder, l2Normalise } from './embedder.js';

const WORD_WEIGHT = 1;
const WORD_PAIR_WEIGHT = 0.5;
const CHAR_GRAM_WEIGHT = 0.35;

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const SPACE = 32;

/**
 * Deterministic, offline embeddings: signed feature hashing of words (`w:word`), adjacent word
 * pairs (`p:first second`) and character 2- and 3-grams (`c:gram`) with FNV-1a, L2-normalised.
 * Character grams match inflections ("region" ~ "regions"). In scripts written without spaces
 * (Chinese, Japanese, Korean) each character is a word, so adjacent characters make the pairs: the
 * usual unigrams and bigrams of CJK retrieval, where a whole run as one word would match nothing.
 * Stored vectors depend on these exact features and hashes: changing them needs a new model name
 * (LOCAL_MODEL in config.ts), which re-embeds stored turns.
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

// Hashing continues from the hash of each feature's prefix instead of building a string per
// feature: five times faster, identical vectors.
const WORD_PREFIX = fnv(FNV_OFFSET, 'w:');
const PAIR_PREFIX = fnv(FNV_OFFSET, 'p:');
const GRAM_PREFIX = fnv(FNV_OFFSET, 'c:');

export function embedText(text: string, dimensions: number): number[] | null {
  return l2Normalise(textFeatures(text, dimensions));
}

/**
 * The hashed features of `text` before normalising: the features of two texts add up to those of
 * the texts joined (but for the word pair across the join), which lets the benches make many
 * distinct vectors from a few embedded texts (scripts/bench/seed.ts).
 */
export function textFeatures(text: string, dimensions: number): Float64Array {
  const vector = new Float64Array(dimensions);
  const add = (hash: number, weight: number) => {
    const h = hash >>> 0;
    vector[(h >>> 1) % dimensions]! += h & 1 ? -weight : weight;
  };
  const words = wordsOf(text.normalize('NFKC').toLowerCase());
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    add(fnv(WORD_PREFIX, word), WORD_WEIGHT);
    if (i > 0) add(fnv(Math.imul(fnv(PAIR_PREFIX, words[i - 1]!) ^ SPACE, FNV_PRIME), word), WORD_PAIR_WEIGHT);
    const chars = [...`^${word}$`];
    for (let j = 0; j + 2 <= chars.length; j++) {
      const bigram = fnv(fnv(GRAM_PREFIX, chars[j]!), chars[j + 1]!);
      add(bigram, CHAR_GRAM_WEIGHT);
      if (j + 3 <= chars.length) add(fnv(bigram, chars[j + 2]!), CHAR_GRAM_WEIGHT);
    }
  }
  return vector;
}

/** Words between spaces and punctuation, with each character of an unspaced script a word of its own. */
function wordsOf(text: string): string[] {
  const words: string[] = [];
  forEachSegment(text, (segment, unspaced) => (unspaced ? words.push(...segment) : words.push(segment)));
  return words;
}

/** FNV-1a over UTF-16 code units, continued from `hash`. */
function fnv(hash: number, text: string): number {
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), FNV_PRIME);
  return hash;
}
