import { type FakeHttpServer, type RecordedRequest, sendJson, startFakeHttpServer } from './fake-http-server.js';

/** A Denodo-AI-SDK-style reply for a question, with SQL naming the year it mentions. */
export function salesReply(question: string, instructions = '') {
  const year = /\b20\d{2}\b/.exec(question)?.[0] ?? /\b20\d{2}\b/.exec(instructions)?.[0] ?? '2024';
  return {
    answer: `Total sales by region for ${year}: EMEA 100, AMER 200.`,
    sql_query: `SELECT region, SUM(amount) FROM sales WHERE year = ${year} GROUP BY region`,
    query_explanation: 'Sums sales per region.',
    tokens: { input_tokens: 10, output_tokens: 20, total_tokens: 30 },
    execution_result: { 'Row 1': [{ columnName: 'region', value: 'EMEA' }] },
    related_questions: ['What about last year?'],
    tables_used: ['sales'],
    raw_graph: '',
    sql_execution_time: 0.01,
    vector_store_search_time: 0.02,
    llm_time: 0.5,
    total_execution_time: 0.6,
  };
}

export type FakeUpstream = FakeHttpServer & { answerUrl: string; lastBody(): any };

/** The upstream answerQuestion endpoint: answers every question with `salesReply` unless told otherwise. */
export async function startFakeUpstream(): Promise<FakeUpstream> {
  const server = await startFakeHttpServer((req: RecordedRequest, res) => {
    sendJson(res, 200, salesReply(String(req.body?.question ?? ''), String(req.body?.custom_instructions ?? '')));
  });
  return {
    ...server,
    answerUrl: `${server.url}/answerQuestion`,
    lastBody: () => server.requests.at(-1)?.body,
  };
}
