import { type FakeHttpServer, sendJson, startFakeHttpServer } from '../fakes/fake-http-server.js';
import { resultRows } from './run.js';
import { echoAnswer } from './turn-writes.js';
import type { Registry } from './world.js';

const MARKER = /mk_[a-z0-9]{10}/;

export interface IsolationUpstream extends FakeHttpServer {
  answerUrl: string;
  /** Judge what reaches the answerer by this run's registry from now on, forgetting earlier runs. */
  watch(registry: Registry): void;
  /** What reached the answerer that the asker may not see; emptied by each call. */
  takeLeaks(): string[];
}

/**
 * An answerQuestion backend that echoes the question (so the answer, SQL and result rows carry the
 * asker's marker) and answers a question containing "clarify" without SQL. It also checks what
 * memorychat sent it: the whole request (question and the memory in custom_instructions) may
 * carry nothing of anyone but the asker, whose marker opens the question.
 */
export async function startIsolationUpstream(): Promise<IsolationUpstream> {
  let registry: Registry | undefined;
  let leaks: string[] = [];
  const server = await startFakeHttpServer((req, res) => {
    const question = String(req.body?.question ?? '');
    const asker = registry?.markers.get(MARKER.exec(question)?.[0] ?? '');
    if (!registry || !asker) leaks.push(`a question without a known marker reached the answerer: ${question.slice(0, 200)}`);
    else {
      const found = registry.leaksIn(JSON.stringify(req.body), asker, new Set([asker.key]));
      if (found.length) leaks.push(`the answerer was sent, for ${asker.key}: ${found.join('; ')}`);
    }
    if (question.includes('clarify')) return sendJson(res, 200, { answer: echoAnswer(question), sql_query: '', tables_used: '' });
    sendJson(res, 200, {
      answer: echoAnswer(question),
      sql_query: `SELECT note FROM notes WHERE q = '${question}'`,
      execution_result: resultRows(question),
      tables_used: ['notes'],
    });
  });
  return {
    ...server,
    answerUrl: `${server.url}/answerQuestion`,
    watch(next) {
      registry = next;
      leaks = [];
    },
    takeLeaks() {
      const taken = leaks;
      leaks = [];
      return taken;
    },
  };
}
