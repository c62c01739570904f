import type { Principal, Registry } from './world.js';

/** Raised by any check of an isolation run; the property fails with its message. */
export class IsolationViolation extends Error {}

export interface Figures {
  operations: number;
  requests: number;
  leaks: number;
  serverErrors: number;
  mismatches: number;
  maxInFlight: number;
  /** How often each answer came (status and problem code, replays, summarized sessions seen): what the programs reached. */
  outcomes: Record<string, number>;
}

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  body: any;
}

export interface SendOptions {
  body?: unknown;
  headers?: Record<string, string>;
  /** Keys of principals besides the caller whose content this response may carry (an admin's download). */
  alsoOwners?: string[];
}

/**
 * HTTP to the service as one principal. Every response, whatever the operation, is checked before
 * the operation sees it: no 5xx, every 4xx a problem document, and nothing in status line, headers
 * or body that belongs to a principal the caller may not see.
 */
export class IsolationClient {
  private inFlight = 0;
  /** Requests so far per principal that has an API key: even ones go with the key, odd ones with the JWT. */

  constructor(
    private readonly baseUrl: string,
    private readonly registry: Registry,
    readonly figures: Figures,
  ) {}

  async send(caller: Principal, method: string, path: string, options: SendOptions = {}): Promise<Reply> {
    this.inFlight += 1;
    this.figures.maxInFlight = Math.max(this.figures.maxInFlight, this.inFlight);
    let response: Response;
    let text: string;
    try {
      response = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers: {
          ...this.credentials(caller),
          ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...options.headers,
        },
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
      });
      text = await response.text();
    } catch (err) {
      // fetch says only "fetch failed"; what the socket did (a reset, a refusal, a timeout) is in its cause.
      const cause = (err as Error & { cause?: { code?: string; message?: string } }).cause;
      throw new Error(`P${caller.index} ${method} ${path}: ${(err as Error).message} (${cause?.code ?? ''} ${cause?.message ?? ''})`);
    } finally {
      this.inFlight -= 1;
    }
    this.figures.requests += 1;
    const where = `P${caller.index} ${method} ${path}`;
    if (response.status >= 500) {
      this.figures.serverErrors += 1;
      throw new IsolationViolation(`${where} answered ${response.status}: ${text.slice(0, 500)}`);
    }
    const whole = `${response.status}\n${[...response.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n${text}`;
    const owners = new Set([caller.key, ...(options.alsoOwners ?? [])]);
    const sent = `${path} ${options.body === undefined ? '' : JSON.stringify(options.body)}`;
    const leaks = this.registry.leaksIn(whole, caller, owners, sent);
    if (leaks.length) {
      this.figures.leaks += leaks.length;
      throw new IsolationViolation(`LEAK: ${where} (caller ${caller.key}) received ${leaks.join('; ')}\nresponse: ${whole.slice(0, 1500)}`);
    }
    const contentType = response.headers.get('content-type') ?? '';
    if (response.status >= 400 && !contentType.includes('application/problem+json')) {
      this.mismatch(`${where} answered ${response.status} as ${contentType}, not a problem document`);
    }
    let body: any = text;
    if (contentType.includes('json') && text) body = JSON.parse(text);
    this.count(response.status >= 400 ? `${response.status} ${body?.code}` : String(response.status));
    if (response.headers.get('idempotent-replayed') === 'true') this.count('replayed');
    if (text.includes('"is_summarized":true')) this.count('summarized session seen');
    return { status: response.status, headers: response.headers, text, body };
  }

  /**
   * A tool of the MCP server (`POST /mcp`, one JSON-RPC request) as the route it stands for would
   * answer: the whole HTTP response is checked by `send` first; then a tool error is its problem
   * document with the problem's status, and a result is its structured content with 200.
   */
  async tool(caller: Principal, name: string, args: Record<string, unknown>): Promise<Reply> {
    const reply = await this.send(caller, 'POST', '/mcp', {
      body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } },
      headers: { accept: 'application/json, text/event-stream' },
    });
    if (reply.status !== 200) return reply;
    const result = reply.body?.result;
    if (!result?.structuredContent) this.mismatch(`P${caller.index} MCP ${name}: no tool result: ${reply.text.slice(0, 400)}`);
    const body = result.structuredContent;
    this.count(`mcp ${name} ${result.isError ? body.code : 'ok'}`);
    return { status: result.isError ? body.status : 200, headers: reply.headers, text: JSON.stringify(body), body };
  }

  /** The caller's JWT, or for a principal with an API key, the key acting for them (their only way in). */
  private credentials(caller: Principal): Record<string, string> {
    if (!caller.apiKey || !caller.actAs) return { authorization: `Bearer ${caller.token}` };
    this.count('sent with an API key');
    return { 'x-api-key': caller.apiKey, 'x-memory-user': caller.actAs };
  }

  count(outcome: string): void {
    this.figures.outcomes[outcome] = (this.figures.outcomes[outcome] ?? 0) + 1;
  }

  /** A prediction of the model that the service's answer contradicts. */
  mismatch(message: string): never {
    this.figures.mismatches += 1;
    throw new IsolationViolation(message);
  }

  expect(condition: boolean, message: () => string): void {
    if (!condition) this.mismatch(message());
  }

  expectStatus(reply: Reply, status: number, what: string, code?: string): void {
    this.expect(
      reply.status === status && (code === undefined || reply.body?.code === code),
      () => `${what}: expected ${status}${code ? ` ${code}` : ''}, got ${reply.status} ${reply.text.slice(0, 400)}`,
    );
  }
}
