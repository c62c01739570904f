import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendJson } from '../../support/fakes/fake-http-server.js';
import type { FakeUpstream } from '../../support/fakes/fake-upstream.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../support/service/service-with-upstream.js';
import type { TestApp } from '../../support/service/test-app.js';

/** The SQL the answerer returns for each question of these tests. */
const SQL: Record<string, string> = {
  'List everyone older than forty': 'SELECT name FROM singer WHERE age > 40',
  'How many concerts were held in total?': 'SELECT count(*) FROM concert',
  'How many pets are there in total?': 'SELECT count(*) FROM pets',
  'How many singers come from each country?': 'SELECT country, count(*) FROM singer GROUP BY country',
  // Chinese dialogues: the tables are named in English, so only the questions can match.
  列出所有歌手的名字: 'SELECT name FROM singer',
  每个体育场举办了多少场音乐会:
    'SELECT T2.name, count(*) FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id GROUP BY T2.name',
  显示所有宠物的平均年龄: 'SELECT avg(pet_age) FROM pets',
  有多少位歌手: 'SELECT count(*) FROM singer',
  // Tables whose names start alike: their truncated terms are the same ("count").
  'How many countries are there?': 'SELECT count(*) FROM country',
  'How many languages are there?': 'SELECT count(DISTINCT language) FROM countrylanguage',
  'How many cities are there?': 'SELECT count(*) FROM city',
  'How many singers are there?': 'SELECT count(*) FROM singer',
  'How many countries and languages are there?': 'SELECT count(*) FROM country JOIN countrylanguage ON code = countrycode',
  // A question asked again, in a new session.
  'Which students have pets?': 'SELECT * FROM student AS T1 JOIN has_pet AS T2 ON T1.stuid = T2.stuid',
  'Which students have dogs?':
    "SELECT * FROM student AS T1 JOIN has_pet AS T2 ON T1.stuid = T2.stuid JOIN pets AS T3 ON T3.petid = T2.petid WHERE T3.pettype = 'dog'",
  'Which pets are older than three?': 'SELECT * FROM pets WHERE pet_age > 3',
  容量最大的体育场是哪个: 'SELECT name FROM stadium ORDER BY capacity DESC LIMIT 1',
};

describe('hybrid retrieval in /memoryChat', () => {
  let upstream: FakeUpstream;
  let t: TestApp;

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream());
    upstream.handle((req, res) => {
      const sql = SQL[String(req.body?.question)];
      sendJson(res, 200, { answer: 'Here are the results.', sql_query: sql, tables_used: [] });
    });
  });
  afterAll(() => stopServiceWithUpstream({ t, upstream }));

  async function ask(sub: string, question: string) {
    const reply = await t.request('POST', '/memoryChat', { token: t.token(sub), body: { question } });
    expect(reply.status).toBe(200);
    return reply;
  }

  /** The SQL of the similar turns sent upstream with the last question, in the order sent. */
  function similarSqlSent(): string[] {
    const block = String(upstream.lastBody().custom_instructions ?? '');
    const similar = block.split('Related questions this user asked before')[1] ?? '';
    return [...similar.matchAll(/^SQL: (.*)$/gm)].map((m) => m[1]!);
  }

  it('when a question names a table but shares few words with the question that used it, then that turn is sent', async () => {
    await ask('analyst', 'List everyone older than forty');
    await ask('analyst', 'How many concerts were held in total?');
    await ask('analyst', 'How many pets are there in total?');
    await ask('analyst', 'How many singers come from each country?');
    // The two other turns share "How many ... in total" with the question; only the table links this one,
    // whose cosine with the question (0.18 with the local embedder) is below MEMORY_MIN_SIMILARITY.
    expect(similarSqlSent()).toContain('SELECT name FROM singer WHERE age > 40');
  });

  it('when a Chinese question asks about what an earlier Chinese question asked, then that turn comes first', async () => {
    await ask('分析师', '列出所有歌手的名字');
    await ask('分析师', '每个体育场举办了多少场音乐会');
    await ask('分析师', '显示所有宠物的平均年龄');
    await ask('分析师', '有多少位歌手');
    expect(similarSqlSent()[0]).toBe('SELECT name FROM singer');
    await ask('分析师', '容量最大的体育场是哪个');
    expect(similarSqlSent()[0]).toBe(SQL.每个体育场举办了多少场音乐会);
  });

  it('when two tables share the start of their names, then turns over each are sent as different sets of tables', async () => {
    await ask('geographer', 'How many countries are there?');
    await ask('geographer', 'How many languages are there?');
    await ask('geographer', 'How many cities are there?');
    await ask('geographer', 'How many singers are there?');
    await ask('geographer', 'How many countries and languages are there?');
    // One turn per set of tables: country and countrylanguage are two sets, though both truncate to "count".
    expect(similarSqlSent()).toEqual(expect.arrayContaining([SQL['How many countries are there?'], SQL['How many languages are there?']]));
  });

  it('when a question was asked before in another session, then its turn comes first though two others rank above it lexically', async () => {
    await ask('owner', 'Which students have dogs?');
    await ask('owner', 'Which pets are older than three?');
    await ask('owner', 'Which students have pets?');
    await ask('owner', 'Which students have pets?');
    expect(similarSqlSent()[0]).toBe(SQL['Which students have pets?']);
  });

  it('when another user asks the same Chinese question, then none of the first user’s turns is used', async () => {
    const reply = await ask('另一位用户', '有多少位歌手');
    expect(reply.body.memory_context_used.similar_queries_count).toBe(0);
    expect(upstream.lastBody().custom_instructions).toBeUndefined();
  });

  async function search(sub: string, query: string, k = 2) {
    const reply = await t.request('POST', '/memory/search', { token: t.token(sub), body: { query, k } });
    expect(reply.status).toBe(200);
    return (reply.body.results as { sql_query: string }[]).map((r) => r.sql_query);
  }

  it('when /memory/search names a table in a question shaped like other turns, then the turn whose SQL read it is found', async () => {
    await ask('searcher', 'List everyone older than forty');
    await ask('searcher', 'How many concerts were held in total?');
    await ask('searcher', 'How many pets are there in total?');
    // By cosine alone the two "How many ... in total" turns are the two nearest.
    const found = await search('searcher', 'How many singer records are there in total?');
    expect(found).toContain('SELECT name FROM singer WHERE age > 40');
  });

  it('when /memory/search is asked in Chinese, then the Chinese turns about the same thing come first', async () => {
    const found = await search('分析师', '歌手有哪些');
    expect(found.sort()).toEqual(['SELECT count(*) FROM singer', 'SELECT name FROM singer']);
  });
});
