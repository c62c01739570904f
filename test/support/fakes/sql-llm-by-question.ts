import type { LlmReply } from './fake-llm.js';

/**
 * A fake LLM for the sql answerer that writes its SQL from the question, for tests that ask several
 * questions at once: the first entry whose key the question contains (after "Question: ", the
 * prompt's last line) gives the statement.
 */
export function sqlByQuestion(statements: Record<string, string>): LlmReply {
  return (request) => {
    const messages = request.body.messages as { role: string; content: string }[];
    const user = messages.find((m) => m.role === 'user')?.content ?? '';
    const question = user.slice(user.lastIndexOf('Question: ') + 'Question: '.length);
    const key = Object.keys(statements).find((k) => question.includes(k));
    if (!key) return { status: 500, body: { error: { message: `no statement for ${question}`, type: 'server_error' } } };
    return { structured: { kind: 'sql', sql: statements[key], explanation: `Answering ${key}.`, tables: [] } };
  };
}
