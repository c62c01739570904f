import type { ServerResponse } from 'node:http';
import fc from 'fast-check';

/**
 * Hostile replies of an answerer (test/api/app/fuzz.test.ts): what a broken or malicious Denodo-AI-SDK-
 * compatible answerQuestion (which a streamed /memoryChat asks too) or an LLM writing SQL may send. Sizes are in
 * units of the service's limits, so each kind lands on both sides of them.
 */
export type HostileReply =
  | { kind: 'huge-answer'; bytes: number; chunkDelayMs: number }
  | { kind: 'huge-cells'; rows: number; cellBytes: number }
  | { kind: 'nul-and-surrogates'; where: 'answer' | 'sql' | 'cells' | 'keys' | 'tokens' }
  | { kind: 'invalid-json'; body: string | Buffer; status: number }
  | { kind: 'slow'; chunks: number; delayMs: number }
  | { kind: 'huge-arrays'; tables: number; tokensBytes: number }
  | { kind: 'deep'; depth: number };

export function hostileReplies(limits: { maxReplyBytes: number; timeoutMs: number }): fc.Arbitrary<HostileReply> {
  const around = (n: number) => fc.integer({ min: Math.floor(n / 4), max: n * 3 });
  return fc.oneof(
    fc.record({ kind: fc.constant('huge-answer' as const), bytes: around(limits.maxReplyBytes), chunkDelayMs: fc.constantFrom(0, 0, 5) }),
    fc.record({
      kind: fc.constant('huge-cells' as const),
      rows: fc.integer({ min: 1, max: 6 }),
      cellBytes: around(Math.floor(limits.maxReplyBytes / 4)),
    }),
    fc.record({ kind: fc.constant('nul-and-surrogates' as const), where: fc.constantFrom('answer', 'sql', 'cells', 'keys', 'tokens') }),
    fc.record({
      kind: fc.constant('invalid-json' as const),
      status: fc.constantFrom(200, 200, 404, 500, 503),
      body: fc.constantFrom<string | Buffer>(
        '{"answer": "cut off',
        '[1, 2, 3]',
        '"a string"',
        'null',
        '<html>Bad gateway</html>',
        '',
        '{"answer": 42, "tables_used": {"a": 1}, "execution_result": "Error: boom", "sql_query": ["x"]}',
        Buffer.from([0x7b, 0x22, 0x61, 0x6e, 0x73, 0x77, 0x65, 0x72, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
        `{"answer":"${'\\u'.repeat(10)}"}`,
      ),
    }),
    fc.record({
      kind: fc.constant('slow' as const),
      chunks: fc.integer({ min: 2, max: 6 }),
      delayMs: fc.integer({ min: Math.floor(limits.timeoutMs / 8), max: limits.timeoutMs }),
    }),
    fc.record({
      kind: fc.constant('huge-arrays' as const),
      tables: fc.integer({ min: 1000, max: 200_000 }),
      tokensBytes: around(8192),
    }),
    fc.record({ kind: fc.constant('deep' as const), depth: fc.integer({ min: 100, max: 5000 }) }),
  );
}

const MB_CHUNK = Buffer.alloc(1 << 20, 'x');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Writes `chunk` while the client is there, waiting for it to drain. Whichever of drain and close
 * comes first removes both listeners: a huge reply waits on many drains, and each left-over close
 * listener stayed on the response (Node's MaxListenersExceededWarning past ten).
 */
async function write(res: ServerResponse, chunk: string | Buffer) {
  if (res.destroyed) return;
  if (res.write(chunk)) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done).off('close', done);
      resolve();
    };
    res.once('drain', done).once('close', done);
  });
}

/** Sends `reply` as an answerQuestion reply. */
export async function sendHostileReply(res: ServerResponse, reply: HostileReply): Promise<void> {
  res.on('error', () => {});
  switch (reply.kind) {
    case 'huge-answer': {
      res.writeHead(200, { 'content-type': 'application/json' });
      await write(res, '{"sql_query":"SELECT 1","answer":"');
      for (let sent = 0; sent < reply.bytes && !res.destroyed; sent += MB_CHUNK.length) {
        await write(res, MB_CHUNK.subarray(0, Math.min(MB_CHUNK.length, reply.bytes - sent)));
        if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
      }
      res.end('"}');
      return;
    }
    case 'huge-cells': {
      const cell = 'c'.repeat(reply.cellBytes);
      const rows = Object.fromEntries(
        Array.from({ length: reply.rows }, (_, i) => [
          `Row ${i + 1}`,
          [
            { columnName: 'c', value: cell },
            { columnName: 'n', value: -i },
          ],
        ]),
      );
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ answer: 'the cells', sql_query: 'SELECT c, n FROM big', execution_result: rows, tables_used: ['big'] }));
      return;
    }
    case 'nul-and-surrogates': {
      const bad = 'a\u0000b\ud800c\udc00';
      const body: Record<string, unknown> = { answer: 'plain', sql_query: 'SELECT 1' };
      if (reply.where === 'answer') body.answer = bad;
      if (reply.where === 'sql') body.sql_query = `SELECT '${bad}'`;
      if (reply.where === 'cells') body.execution_result = { 'Row 1': [{ columnName: 'c', value: bad }] };
      if (reply.where === 'keys') body.execution_result = [{ [bad]: 1 }];
      if (reply.where === 'tokens') body.tokens = { [bad]: bad };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
      return;
    }
    case 'invalid-json':
      res.writeHead(reply.status, { 'content-type': 'application/json' });
      res.end(reply.body);
      return;
    case 'slow': {
      res.writeHead(200, { 'content-type': 'application/json' });
      await write(res, '{"answer":"');
      for (let i = 0; i < reply.chunks && !res.destroyed; i++) {
        await write(res, `part ${i} `);
        await sleep(reply.delayMs);
      }
      res.end('"}');
      return;
    }
    case 'huge-arrays': {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          answer: 'many tables',
          sql_query: 'SELECT 1',
          tables_used: Array.from({ length: reply.tables }, (_, i) => `schema.table_${i}`),
          tokens: { input_tokens: 1, detail: 't'.repeat(reply.tokensBytes) },
        }),
      );
      return;
    }
    case 'deep': {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"answer":"deep","sql_query":"SELECT 1","execution_result":${'['.repeat(reply.depth)}1${']'.repeat(reply.depth)}}`);
      return;
    }
  }
}

/**
 * What the SQL answerer's LLM (test/support/fakes/fake-llm.ts) may write: SQL whose cells are huge, SQL
 * returning NUL-free but control-laden text, explanations and table lists far over the stored bounds,
 * output that is not the structured JSON asked for, and SQL that tries to outlast or outlive its question.
 */
export function hostileSqlReplies(cellBytes: number): fc.Arbitrary<{ structured: unknown } | string> {
  const sql = (statement: string, extra: Record<string, unknown> = {}) => ({
    structured: { kind: 'sql', sql: statement, explanation: 'Hostile.', tables: ['demo.sales'], ...extra },
  });
  return fc.oneof(
    fc.integer({ min: 1, max: 4 }).map((rows) => sql(`SELECT repeat('x', ${cellBytes}) AS c, -g AS n FROM generate_series(1, ${rows}) g`)),
    fc.constant(sql("SELECT E'=cmd|'' /C calc''!A0\\t\\r' AS formula, repeat(E'\\u00e9', 1000) AS accents")),
    fc.integer({ min: 1, max: 3 }).map((n) => sql('SELECT 1 AS one', { explanation: 'e'.repeat(n * cellBytes) })),
    fc.constant(sql('SELECT 1 AS one', { tables: Array.from({ length: 50_000 }, (_, i) => `demo.t${i}`) })),
    fc.constant(sql('SELECT 1 AS one', { explanation: 'nul \u0000 and \ud800 lone' })),
    fc.constant({ structured: { kind: 'clarification', sql: '', explanation: `a${'\u0000'.repeat(3)}`.repeat(1000), tables: [] } }),
    fc.constantFrom('not json at all', '{"kind": "sql", "sql": ', '[]', '{"kind": "sql"}'),
    // Issue 39's statements: one question stretched over many fetches, statement_timeout lifted from
    // inside, a session-level lock left on the pooled connection.
    fc.constantFrom(
      sql(`SELECT pg_sleep(2.5) AS c1, ${Array.from({ length: 63 }, (_, i) => `1 AS c${i + 2}`).join(', ')} FROM generate_series(1, 8)`),
      sql(
        "SELECT CASE WHEN g = 1 THEN set_config('statement_timeout', '0', true) END, pg_sleep(CASE WHEN g > 32 THEN 5 ELSE 0 END) FROM generate_series(1, 40) g",
      ),
      sql('SELECT pg_advisory_lock(42) AS locked'),
    ),
  );
}
