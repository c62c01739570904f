import { embedText } from '../../../services/providers/embeddings/local-embedder.js';
import { type FakeHttpServer, type RecordedRequest, sendJson, startFakeHttpServer } from './fake-http-server.js';

/**
 * Text, an HTTP error, or `{ structured }`: the object of a structured output, which the OpenAI fake
 * sends as the message's JSON content and the Anthropic fake as a call of the tool the request forces.
 */
export type LlmReply = (request: RecordedRequest) => string | { status: number; body: unknown } | { structured: unknown };

/**
 * The vectors the fake Embeddings API returns for its inputs: by default the local embedder's, at the
 * requested `dimensions` (64 when none), so that similar texts are near as with a real model.
 */
export type EmbeddingsReply = (inputs: string[], dimensions: number) => number[][];
const localVectors: EmbeddingsReply = (inputs, dimensions) =>
  inputs.map((text) => embedText(text, dimensions) ?? new Array(dimensions).fill(0));

/** Speaks the OpenAI Chat Completions and Embeddings APIs; point the SDK at `baseURL`. */
export async function startFakeOpenAI(
  reply: LlmReply,
  embeddings: EmbeddingsReply = localVectors,
): Promise<FakeHttpServer & { baseURL: string }> {
  const server = await startFakeHttpServer((req, res) => {
    if (req.path === '/v1/embeddings') {
      const inputs: string[] = typeof req.body.input === 'string' ? [req.body.input] : req.body.input;
      const vectors = embeddings(inputs, req.body.dimensions ?? 64);
      return sendJson(res, 200, {
        object: 'list',
        data: vectors.map((embedding, index) => ({ object: 'embedding', index, embedding })),
        model: req.body.model,
        usage: { prompt_tokens: inputs.length, total_tokens: inputs.length },
      });
    }
    if (req.path === '/v1/chat/completions') {
      const scripted = reply(req);
      if (typeof scripted === 'object' && 'status' in scripted) return sendJson(res, scripted.status, scripted.body);
      const out = typeof scripted === 'string' ? scripted : JSON.stringify(scripted.structured);
      return sendJson(res, 200, {
        id: 'chatcmpl-test',
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: req.body.model,
        choices: [{ index: 0, message: { role: 'assistant', content: out, refusal: null }, finish_reason: 'stop', logprobs: null }],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      });
    }
    sendJson(res, 404, { error: { message: `no route ${req.path}`, type: 'invalid_request_error' } });
  });
  return { ...server, baseURL: `${server.url}/v1` };
}

/** Speaks the Anthropic Messages API; point the SDK at `baseURL`. */
export async function startFakeAnthropic(reply: LlmReply): Promise<FakeHttpServer & { baseURL: string }> {
  const server = await startFakeHttpServer((req, res) => {
    if (req.path === '/v1/messages') {
      const out = reply(req);
      if (typeof out === 'object' && 'status' in out) return sendJson(res, out.status, out.body);
      const structured = typeof out === 'object';
      return sendJson(res, 200, {
        id: 'msg_test',
        type: 'message',
        role: 'assistant',
        model: req.body.model,
        content: structured
          ? [{ type: 'tool_use', id: 'toolu_test', name: req.body.tool_choice?.name, input: out.structured }]
          : [{ type: 'text', text: out }],
        stop_reason: structured ? 'tool_use' : 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 5 },
      });
    }
    sendJson(res, 404, { type: 'error', error: { type: 'not_found_error', message: `no route ${req.path}` } });
  });
  return { ...server, baseURL: server.url };
}
