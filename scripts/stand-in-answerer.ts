// A DEVELOPMENT AID, not an answerer: a tiny stand-in for a Denodo-AI-SDK `/answerQuestion`
// endpoint, so the README walkthrough runs on a machine with no data platform.
// `npm run stand-in` listens on 127.0.0.1:8008 (PORT to change). It knows one table, `sales`,
// and resolves a follow-up ("What about 2023?") only from the previous SQL that memorychat sends it.
import { createServer } from 'node:http';

const port = Number(process.env.PORT ?? 8008);

function answer(question: string, instructions: string) {
  const previousSql = [...instructions.matchAll(/^SQL: (.+)$/gm)].at(-1)?.[1] ?? [...question.matchAll(/^SQL: (.+)$/gm)].at(-1)?.[1];
  const currentQuestion = question.split('Current question: ').at(-1)!;
  const year = /\b(19|20)\d{2}\b/.exec(currentQuestion)?.[0];

  let sql: string | undefined;
  if (/sales/i.test(currentQuestion) && /region/i.test(currentQuestion)) {
    sql = `SELECT region, SUM(amount) AS total_sales FROM sales WHERE year = ${year ?? 2024} GROUP BY region`;
  } else if (previousSql && year) {
    sql = previousSql.replace(/\b(19|20)\d{2}\b/, year);
  }
  if (!sql) {
    return {
      answer: 'I can answer questions about sales by region and year. Which year do you mean?',
      sql_query: '',
      tables_used: '',
      execution_result: {},
    };
  }
  const y = Number(/\b(19|20)\d{2}\b/.exec(sql)?.[0] ?? 2024);
  const rows = ['EMEA', 'AMER', 'APAC'].map((region, i) => ({ region, total_sales: (i + 2) * 1000 + (y % 100) * 10 }));
  return {
    answer: `Total sales by region for ${y}: ${rows.map((r) => `${r.region} ${r.total_sales}`).join(', ')}.`,
    sql_query: sql,
    query_explanation: `Sums sales.amount per region for ${y}.`,
    tables_used: ['sales'],
    execution_result: Object.fromEntries(
      rows.map((r, i) => [
        `Row ${i + 1}`,
        [
          { columnName: 'region', value: r.region },
          { columnName: 'total_sales', value: String(r.total_sales) },
        ],
      ]),
    ),
    related_questions: [`What were total sales by region in ${y - 1}?`],
    tokens: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
    sql_execution_time: 0.001,
    vector_store_search_time: 0,
    llm_time: 0,
    total_execution_time: 0.001,
  };
}

createServer((req, res) => {
  if (req.method !== 'POST' || !req.url?.startsWith('/answerQuestion')) {
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'Not Found' }));
    return;
  }
  let body = '';
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    const request = JSON.parse(body || '{}') as { question?: string; custom_instructions?: string };
    console.log(`stand-in: question=${JSON.stringify(request.question)} custom_instructions=${request.custom_instructions ? 'yes' : 'no'}`);
    const reply = answer(request.question ?? '', request.custom_instructions ?? '');
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
  });
}).listen(port, '127.0.0.1', () => console.log(`stand-in answerQuestion on http://127.0.0.1:${port}/answerQuestion`));
