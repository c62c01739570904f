// `npm run bench -- explain-turn --database NAME [--user N] [--follow-up]`: EXPLAIN
// (ANALYZE, BUFFERS) of /memoryChat's two statements for one seeded user (as the floor sends them,
// under the user's row-security scope, generic plan as a prepared statement ends with), rolled back.
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import type pg from 'pg';
import type { Queryable } from '../../services/db/repositories/queryable.js';
import { scopeLiterals } from '../../services/db/scoped-statement.js';
import { conversationStream, TENANT, userId } from './data.js';
import { floorTurns } from './floor.js';
import { literal } from './retrieval-plan.js';
import { openServerDatabase } from './server-databases.js';

const { values: args } = parseArgs({
  options: {
    database: { type: 'string' },
    user: { type: 'string', default: '17' },
    'follow-up': { type: 'boolean', default: false },
    repeat: { type: 'string', default: '1' },
  },
});

const db = await openServerDatabase(args.database!, 1);
const conversation = conversationStream(Number(args.user), 1000)();
const user = conversation.user;
const captured: pg.QueryConfig[] = [];
const capture: Queryable = {
  query: async (s: never) => {
    captured.push(s as pg.QueryConfig);
    // What the statements' callers read: a session for the retrieval, a stored turn for the append.
    const session = { session_id: randomUUID(), session_name: 'explained' };
    return { rows: [{ source: 'session', row: session, session, turn_number: 1 }] } as never;
  },
};
const { rows } = await db.pool.query<{ session_id: string }>(
  'SELECT session_id FROM sessions WHERE tenant_id = $1 AND user_id = $2 ORDER BY updated_at DESC LIMIT 1',
  [TENANT, userId(user)],
);
await floorTurns(() => capture)({
  user,
  database: conversation.database,
  question: conversation.questions[0]!,
  sql: conversation.sqls[0]!,
  sessionId: args['follow-up'] ? rows[0]!.session_id : undefined,
});
const client = await db.pool.connect();
try {
  for (const [i, statement] of captured.entries()) {
    await client.query(`${scopeLiterals(['memorychat_app', TENANT, userId(user), 'off'])}; SET LOCAL plan_cache_mode = force_generic_plan`);
    const name = `explained_${i}`;
    await client.query({ name, text: statement.text, values: statement.values });
    const literals = statement.values!.map((v) => literal(client, v));
    for (let r = 0; r < Number(args.repeat); r++) {
      const { rows: plan } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, VERBOSE false) EXECUTE ${name}(${literals.join(', ')})`);
      if (r === Number(args.repeat) - 1) console.log(plan.map((p) => p['QUERY PLAN']).join('\n'), '\n');
    }
    await client.query('ROLLBACK');
  }
} finally {
  client.release();
  await db.close();
}
