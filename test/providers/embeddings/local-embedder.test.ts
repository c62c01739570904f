import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { embedText } from '../../../services/providers/embeddings/local-embedder.js';

const cosine = (a: number[], b: number[]) => a.reduce((sum, v, i) => sum + v * b[i]!, 0);

describe('the local embedder', () => {
  it('when the same text is embedded twice, then the vectors are identical and of unit length', () => {
    const a = embedText('Show me total sales by region for 2024', 384)!;
    expect(embedText('Show me total sales by region for 2024', 384)).toEqual(a);
    expect(a).toHaveLength(384);
    expect(cosine(a, a)).toBeCloseTo(1, 10);
  });

  it('when texts share words, then they are closer than unrelated texts', () => {
    const q = embedText('How many singers are from France?', 384)!;
    expect(cosine(q, embedText('How many singers come from France?', 384)!)).toBeGreaterThan(
      cosine(q, embedText('List the names of all dogs', 384)!) + 0.3,
    );
  });

  it('when the text is Chinese (no spaces), then related questions are still close', () => {
    const q = embedText('显示2024年各地区的销售总额', 384)!;
    expect(cosine(q, embedText('2023年各地区的销售总额是多少', 384)!)).toBeGreaterThan(
      cosine(q, embedText('列出所有狗的名字', 384)!) + 0.3,
    );
  });

  it('when Chinese questions share characters but no whole run, then they are closer than questions sharing fewer', () => {
    // Each character is a word: a run counted as one word would match only an identical run.
    const q = embedText('最年轻的员工是谁', 384)!;
    const sameTable = cosine(q, embedText('公司有多少名员工', 384)!);
    expect(sameTable).toBeGreaterThan(0.15);
    expect(sameTable).toBeGreaterThan(cosine(q, embedText('哪家商店的产品最多', 384)!) + 0.05);
  });

  it.each([
    ['Show me total sales by region for 2024', '68afee624a1c3783'],
    ['東京の売上は？ 2023年', '6b8a09861e754b28'], // local-hash-v2: each character of an unspaced run is a word
    ['Zürich Straße – naïve café 👍 emoji', 'eb7a7aa1079eae46'],
  ])('when %j is embedded, then the vector is the one stored turns were embedded with', (text, fingerprint) => {
    // Stored embeddings are compared with new ones: any change to features or hashing must come
    // with a new model name, never silently.
    const vector = embedText(text, 384)!;
    expect(
      createHash('sha256')
        .update(vector.map((x) => x.toFixed(12)).join(','))
        .digest('hex')
        .slice(0, 16),
    ).toBe(fingerprint);
  });

  it('when the text has nothing to embed, then there is no vector', () => {
    expect(embedText('?!', 384)).toBeNull();
  });
});
