import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI } from '../support/fakes/fake-llm.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

const DIALOGUES = [
  {
    database_id: 'concert_singer',
    interaction: [
      { utterance: 'How many singers are there?', query: 'SELECT count(*) FROM singer' },
      { utterance: 'And their average age?', query: 'SELECT avg(age) FROM singer' },
    ],
  },
  { database_id: 'concert_singer', interaction: [{ utterance: 'List the names of all singers.', query: 'SELECT name FROM singer' }] },
  { database_id: 'concert_singer', interaction: [{ utterance: 'How many concerts were held?', query: 'SELECT count(*) FROM concert' }] },
];

/** `npm run eval` as a user runs it, with its embeddings from an OpenAI-compatible server. */
describe('the eval script', () => {
  let dir: string;
  let openai: Awaited<ReturnType<typeof startFakeOpenAI>>;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'memorychat-eval-test-'));
    writeFileSync(path.join(dir, 'dialogues.json'), JSON.stringify(DIALOGUES));
    openai = await startFakeOpenAI(() => 'unused');
  });
  afterAll(async () => {
    await openai?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // Its own process loads tsx, the service and an embedded database: 4 s alone, over 30 s in a loaded CI
  // run; 90 s as the other tests that start a process of the service.
  it('when EMBEDDINGS_* name a compatible server, then the dialogues are replayed with its vectors and the figures say so', async () => {
    const json = path.join(dir, 'figures.json');
    const candidates = path.join(dir, 'candidates.json');
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'scripts/eval/run.ts', '--data', path.join(dir, 'dialogues.json'), '--json', json, '--candidates', candidates],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          EMBEDDINGS_PROVIDER: 'openai',
          EMBEDDINGS_MODEL: 'text-embedding-compatible',
          EMBEDDINGS_DIMENSIONS: '64',
          OPENAI_API_KEY: 'sk-test',
          OPENAI_BASE_URL: openai.baseURL,
        },
      },
    );
    expect(stdout).toContain('embeddings text-embedding-compatible@64');
    const figures = JSON.parse(readFileSync(json, 'utf8'));
    expect(figures).toMatchObject({
      embedding_model: 'text-embedding-compatible@64',
      dialogues: 3,
      turns: 4,
      follow_up_carry: { follow_ups: 1, previous_sql: 1, all_earlier_sql: 1 },
      // The second dialogue's question has earlier turns over `singer`; the third's table is new.
      cross_session: { questions: 1, hit_at_1: 1, hit_at_3: 1, first_questions_without_same_tables: 1 },
    });
    expect(openai.requests.filter((r) => r.path === '/v1/embeddings').length).toBeGreaterThanOrEqual(4);
    // What a rerank is fitted on: that question's candidates before the rerank, the singer turns among them.
    const records = JSON.parse(readFileSync(candidates, 'utf8'));
    expect(records).toEqual([
      expect.objectContaining({ database_id: 'concert_singer', question: 'List the names of all singers.', wanted: 'singer' }),
    ]);
    expect(records[0].candidates.map((c: { tables: string }) => c.tables)).toEqual(['singer', 'singer']);
    expect(records[0].candidates.every((c: { score: number }) => c.score > 0)).toBe(true);
  }, 90_000);
});
