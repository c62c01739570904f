// Slack as a bot meets it, written from Slack's docs: the Events API posts event_callback envelopes
// to the app's request URL, signed with the app's signing secret (X-Slack-Signature: "v0=" + hex
// HMAC-SHA256 of "v0:{timestamp}:{raw body}", X-Slack-Request-Timestamp); the Web API takes
// form-encoded POSTs to https://slack.com/api/{method} and answers JSON with "ok". Files go through
// files.getUploadURLExternal (an upload_url and file_id), a POST of the bytes to that URL, and
// files.completeUploadExternal (the file ids, channel_id, thread_ts, initial_comment).
import { createHmac } from 'node:crypto';
import { type FakeHttpServer, type RecordedRequest, sendJson, startFakeHttpServer } from '../../support/fakes/fake-http-server.js';

export const BOT_USER_ID = 'UBOT0001';
export const TEAM_ID = 'T0000001';

export interface WebApiCall {
  method: string;
  args: Record<string, string>;
}

export interface FakeSlack {
  /** The Web API root the bot's client is pointed at (clientOptions.slackApiUrl). */
  apiUrl: string;
  /** Web API calls the bot made, in order. */
  calls: WebApiCall[];
  /** Bytes posted to upload URLs, by file id. */
  uploads: Map<string, string>;
  /** Posts an Events API envelope for `event` to the bot, signed with `signingSecret`. */
  sendEvent(
    eventsUrl: string,
    event: Record<string, unknown>,
    options?: {
      signingSecret?: string;
      /** Slack's id of the event: the same on every retry of one delivery. */
      eventId?: string;
      /** Seconds added to now in the signed X-Slack-Request-Timestamp. */
      timestampOffsetSec?: number;
      /** Sent as X-Slack-Retry-Num, as Slack retries a delivery it saw no quick 200 for. */
      retryNum?: number;
    },
  ): Promise<{ status: number; body: string }>;
  close(): Promise<void>;
}

export async function startFakeSlack(signingSecret: string): Promise<FakeSlack> {
  const calls: WebApiCall[] = [];
  const uploads = new Map<string, string>();
  let counter = 0;
  const nextTs = () => `1700001000.${String(++counter).padStart(6, '0')}`;

  let server: FakeHttpServer | undefined;
  server = await startFakeHttpServer(async (req: RecordedRequest, res) => {
    const upload = /^\/upload\/(F\w+)$/.exec(req.path);
    if (upload) {
      // The upload URL takes the bytes as the body, or as the one file of a multipart form.
      const raw = typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
      const type = String(req.headers['content-type'] ?? '');
      const content = type.startsWith('multipart/form-data') ? await multipartFile(raw, type) : raw;
      uploads.set(upload[1]!, content);
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`OK - ${content.length}`);
      return;
    }
    const method = /^\/api\/([\w.]+)$/.exec(req.path)?.[1];
    if (!method || req.method !== 'POST') return sendJson(res, 404, { ok: false, error: 'unknown_method' });
    if (req.headers.authorization !== 'Bearer xoxb-fake-bot-token') return sendJson(res, 200, { ok: false, error: 'invalid_auth' });
    const args = Object.fromEntries(new URLSearchParams(typeof req.body === 'string' ? req.body : ''));
    calls.push({ method, args });
    switch (method) {
      case 'auth.test':
        return sendJson(res, 200, {
          ok: true,
          url: 'https://fake-workspace.slack.com/',
          team: 'Fake workspace',
          user: 'memorychat',
          team_id: TEAM_ID,
          user_id: BOT_USER_ID,
          bot_id: 'BBOT0001',
          is_enterprise_install: false,
        });
      case 'chat.postMessage':
        return sendJson(res, 200, {
          ok: true,
          channel: args.channel,
          ts: nextTs(),
          message: { type: 'message', user: BOT_USER_ID, text: args.text, thread_ts: args.thread_ts },
        });
      // Shown to `user` alone, in `channel` (and `thread_ts`); Slack answers with the message's ts only.
      case 'chat.postEphemeral':
        if (!args.user || !args.channel) return sendJson(res, 200, { ok: false, error: 'invalid_arguments' });
        return sendJson(res, 200, { ok: true, message_ts: nextTs() });
      case 'files.getUploadURLExternal': {
        if (!args.filename || !args.length) return sendJson(res, 200, { ok: false, error: 'invalid_arguments' });
        const fileId = `F${String(++counter).padStart(8, '0')}`;
        return sendJson(res, 200, { ok: true, upload_url: `${server!.url}/upload/${fileId}`, file_id: fileId });
      }
      case 'files.completeUploadExternal': {
        const files = JSON.parse(args.files ?? '[]') as { id: string; title?: string }[];
        if (!files.every((file) => uploads.has(file.id))) return sendJson(res, 200, { ok: false, error: 'file_not_found' });
        return sendJson(res, 200, { ok: true, files: files.map((file) => ({ id: file.id, title: file.title, name: file.title })) });
      }
      default:
        return sendJson(res, 200, { ok: false, error: 'unknown_method' });
    }
  });

  let eventCounter = 0;
  return {
    apiUrl: `${server.url}/api/`,
    calls,
    uploads,
    async sendEvent(eventsUrl, event, options = {}) {
      const body = JSON.stringify({
        token: 'verification-token-unused',
        team_id: TEAM_ID,
        api_app_id: 'A0000001',
        event: { event_ts: event.ts, ...event },
        type: 'event_callback',
        event_id: options.eventId ?? `Ev${String(++eventCounter).padStart(8, '0')}`,
        event_time: Math.floor(Date.now() / 1000),
        authorizations: [{ team_id: TEAM_ID, user_id: BOT_USER_ID, is_bot: true, is_enterprise_install: false }],
      });
      const timestamp = String(Math.floor(Date.now() / 1000) + (options.timestampOffsetSec ?? 0));
      const signature = createHmac('sha256', options.signingSecret ?? signingSecret)
        .update(`v0:${timestamp}:${body}`)
        .digest('hex');
      const response = await fetch(eventsUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-slack-request-timestamp': timestamp,
          'x-slack-signature': `v0=${signature}`,
          ...(options.retryNum === undefined
            ? {}
            : { 'x-slack-retry-num': String(options.retryNum), 'x-slack-retry-reason': 'http_timeout' }),
        },
        body,
      });
      return { status: response.status, body: await response.text() };
    },
    close: () => server.close(),
  };
}

async function multipartFile(raw: string, contentType: string): Promise<string> {
  const form = await new Response(raw, { headers: { 'content-type': contentType } }).formData();
  const file = [...form.values()].find((value) => typeof value !== 'string');
  return file ? await file.text() : '';
}
