import fc from 'fast-check';
import { type FuzzBody, fuzzBody } from './bodies.js';
import type { RawRequest } from './raw-http.js';
import { type JsonSchema, type Overrides, validValue } from './schema.js';
import { edgeNumbers, fuzzText, hugeText, NASTY_STRINGS, plainText } from './values.js';

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema: JsonSchema;
}

/** One path and method of the OpenAPI document. */
export interface Operation {
  method: string;
  path: string;
  parameters: Parameter[];
  body?: JsonSchema;
  isPublic: boolean;
}

export interface FuzzUser {
  userId: string;
  authorization: string;
  /** Sessions with three turns that have SQL and results; never deleted or cleared by the fuzz. */
  sessionIds: string[];
  /** Sessions the fuzz may delete or clear. */
  doomedSessionIds: string[];
}

/** What the fuzzer knows about the running service: users with their data, and other ids to aim at. */
export interface FuzzWorld {
  users: FuzzUser[];
  /** Users only `DELETE /me` and the admin routes aim at: erasing the others would leave nothing to fuzz. */
  expendableUsers: FuzzUser[];
  brokenAuthorizations: string[];
  /** Sessions of a user none of the fuzzed tokens belongs to. */
  foreignSessionIds: string[];
  gdprRequestIds: string[];
  /** Body limits: turn writes have their own. */
  bodyLimitBytes: number;
  turnBodyLimitBytes: number;
}

export interface FuzzRequest extends RawRequest {
  operation: string;
  variant: string;
}

/** Every operation of the document, plus the public routes it hides (/metrics, /openapi.json, /docs). */
export function operationsOf(spec: {
  paths: Record<string, Record<string, { parameters?: Parameter[]; requestBody?: any; security?: unknown[] }>>;
}): Operation[] {
  const operations = Object.entries(spec.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      parameters: op.parameters ?? [],
      body: op.requestBody?.content?.['application/json']?.schema as JsonSchema | undefined,
      isPublic: !op.security?.length,
    })),
  );
  const hidden = ['/metrics', '/openapi.json', '/docs'].filter((path) => !spec.paths[path]);
  return [...operations, ...hidden.map((path) => ({ method: 'GET', path, parameters: [], isPublic: true }))];
}

/** Percent-encodes the UTF-8 of `text` (a lone surrogate becomes U+FFFD, as any client would send it). */
export function percentEncode(text: string): string {
  return [...Buffer.from(text, 'utf8')]
    .map((b) =>
      /[A-Za-z0-9\-._~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('');
}

/** UTF-8 text as the Latin-1 string that writes its bytes into a header. */
const headerBytes = (text: string) => Buffer.from(text, 'utf8').toString('latin1');

/** Path segments that are not valid percent-encoding, or that try to leave the route. */
const BROKEN_SEGMENTS = ['%ZZ', '%', '%00', '%ED%A0%80', '%C0%80', '%FF', 'a%2Fb', '..', '.', '', 'x'.repeat(600), '%2e%2e', 'é', ' '];

const NUMERIC_STRINGS = ['1e400', '-1e400', 'Infinity', 'NaN', '-1', '0', '0x10', ' 5', '1.5', '', 'true', '[]', '9'.repeat(40), '1e-400'];

/** `arbitrary` once in `every` samples, null otherwise (fc.option is the other way round: mostly a value). */
function rarely<T>(arbitrary: fc.Arbitrary<T>, every: number): fc.Arbitrary<T | null> {
  return fc.oneof({ weight: every - 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary });
}

const DESTRUCTIVE = new Set(['DELETE /sessions/{id}', 'POST /sessions/{id}/clear']);

function requestArbitrary(op: Operation, world: FuzzWorld): fc.Arbitrary<FuzzRequest> {
  const users = op.method === 'DELETE' && op.path === '/me' ? world.expendableUsers : world.users;
  // Built once per user and chosen per sample: building arbitraries per sample costs more than running them.
  const parts = new Map(users.map((user) => [user, requestParts(op, world, user)]));
  const actor = fc.oneof(
    { weight: 7, arbitrary: fc.constantFrom(...users).map((user) => ({ user, authorization: user.authorization as string | undefined })) },
    { weight: 2, arbitrary: fc.constantFrom(...world.brokenAuthorizations).map((authorization) => ({ user: users[0]!, authorization })) },
    { weight: 1, arbitrary: fc.constant({ user: users[0]!, authorization: undefined as string | undefined }) },
  );
  return actor.chain(({ user, authorization }) =>
    parts.get(user)!.map(({ method, path, query, extraQuery, headers, extraHeader: extra, body, framing }) => {
      let target = op.path;
      for (const [name, value] of path) target = target.replace(`{${name}}`, value);
      const queryParts = [...query.flat(), ...(extraQuery ? [extraQuery] : [])];
      if (queryParts.length) target += `?${queryParts.join('&')}`;
      const headerList: [string, string][] = [...headers.flat()];
      if (authorization !== undefined) headerList.push(['Authorization', headerBytes(authorization)]);
      if (extra) headerList.push(extra);
      const request: FuzzRequest = {
        operation: `${op.method} ${op.path}`,
        variant: body?.variant ?? 'no-body',
        method,
        target,
        headers: headerList,
      };
      if (body) {
        if (body.contentType !== undefined) headerList.push(['Content-Type', body.contentType]);
        Object.assign(request, frame(body.bytes, framing, headerList));
        request.variant += framing === 'length' ? '' : `+${framing}`;
      }
      return request;
    }),
  );
}

/** Everything of a request but its Authorization header, aimed at `user`'s data. */
function requestParts(op: Operation, world: FuzzWorld, user: FuzzUser) {
  const sessionIds = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...(DESTRUCTIVE.has(`${op.method} ${op.path}`) ? user.doomedSessionIds : user.sessionIds)) },
    { weight: 1, arbitrary: fc.constantFrom(...world.foreignSessionIds) },
    { weight: 1, arbitrary: fc.uuid() },
  );
  const overrides: Overrides = { session_id: sessionIds, messages: validChain, execution_result: denodoResult, q: sqlKeywords };
  const limit = op.path.endsWith('/turns') ? world.turnBodyLimitBytes : world.bodyLimitBytes;
  const body: fc.Arbitrary<FuzzBody | undefined> = op.body
    ? fuzzBody(validValue(op.body, overrides), Object.keys(op.body.properties ?? {}), limit)
    : rarely(fuzzBody(fc.constant({}), [], limit), 10).map((b) => b ?? undefined);
  return fc.record({
    method: fc.oneof(
      { weight: 30, arbitrary: fc.constant(op.method) },
      fc.constantFrom('PUT', 'OPTIONS', 'TRACE', 'get', 'FOO', 'HEAD', 'PATCH'),
    ),
    path: fc.tuple(...op.parameters.filter((p) => p.in === 'path').map((p) => pathValue(p, op, world, sessionIds))),
    query: fc.tuple(...op.parameters.filter((p) => p.in === 'query').map((p) => queryValue(p, overrides))),
    extraQuery: rarely(fc.constantFrom('x=1', 'limit=1&limit=2', 'a[]=1', '%ZZ=1', 'q', '&&', `k=${percentEncode('\u0000')}`), 8),
    headers: fc.tuple(...op.parameters.filter((p) => p.in === 'header').map((p) => headerValue(p))),
    extraHeader: rarely(extraHeader, 4),
    body,
    framing: fc.oneof(
      { weight: 20, arbitrary: fc.constant('length' as const) },
      fc.constantFrom('chunked' as const, 'short-length' as const, 'length-and-chunked' as const),
    ),
  });
}

function frame(
  bytes: Buffer,
  framing: 'length' | 'chunked' | 'short-length' | 'length-and-chunked',
  headers: [string, string][],
): Partial<RawRequest> {
  const chunked = Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n0\r\n\r\n')]);
  switch (framing) {
    case 'length':
      return { body: bytes };
    case 'short-length':
      return { body: bytes, contentLength: Math.floor(bytes.length / 2) };
    case 'chunked':
      headers.push(['Transfer-Encoding', 'chunked']);
      return { body: chunked, contentLength: false };
    case 'length-and-chunked':
      headers.push(['Transfer-Encoding', 'chunked']);
      return { body: chunked, contentLength: chunked.length };
  }
}

function pathValue(p: Parameter, op: Operation, world: FuzzWorld, sessionIds: fc.Arbitrary<string>): fc.Arbitrary<[string, string]> {
  const valid =
    p.name === 'ref'
      ? fc.oneof(fc.integer({ min: 1, max: 6 }).map(String), fc.constantFrom('first', 'last', 'previous'))
      : p.name === 'user_id'
        ? fc.oneof(fc.constantFrom(...world.expendableUsers.map((u) => u.userId)), plainText)
        : op.path.startsWith('/gdpr/')
          ? fc.oneof(fc.constantFrom(...world.gdprRequestIds), fc.uuid())
          : sessionIds;
  return fc
    .oneof(
      { weight: 6, arbitrary: valid.map(percentEncode) },
      {
        weight: 2,
        arbitrary: fc
          .oneof(fuzzText, fc.constantFrom(...NASTY_STRINGS), fc.constantFrom('0', '-1', '1e3', '9999999999', '1.5'))
          .map(percentEncode),
      },
      { weight: 1, arbitrary: fc.constantFrom(...BROKEN_SEGMENTS) },
    )
    .map((value) => [p.name, value]);
}

function queryValue(p: Parameter, overrides: Overrides): fc.Arbitrary<string[]> {
  const valid = validValue(p.schema, overrides, p.name).map((v) => String(v));
  const value = fc.oneof(
    { weight: 5, arbitrary: valid.map(percentEncode) },
    { weight: 2, arbitrary: fc.constantFrom(...NUMERIC_STRINGS).map(percentEncode) },
    { weight: 2, arbitrary: fuzzText.map(percentEncode) },
    { weight: 1, arbitrary: fc.oneof(hugeText, edgeNumbers.map(String)).map(percentEncode) },
    { weight: 1, arbitrary: fc.constantFrom('%ZZ', '%', '%00', '%ED%A0%80', '%C0%80') },
  );
  return fc.option(value, { freq: p.required ? 10 : 3 }).map((v) => (v === null ? [] : [`${p.name}=${v}`]));
}

/** A header value: printable, or bytes Node's parser refuses (control characters, NUL), or UTF-8. */
const headerText = fc.oneof(
  { weight: 3, arbitrary: fc.uuid() },
  { weight: 2, arbitrary: fuzzText.map(headerBytes) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', 'x'.repeat(256), 'x'.repeat(20_000), 'a\u0000b', 'a\u0007b', 'é', headerBytes('😀')) },
);

function headerValue(p: Parameter): fc.Arbitrary<[string, string][]> {
  const valid = p.name === 'x-upstream-authorization' ? fc.constant('Bearer upstream-token') : validValue(p.schema).map(String);
  return fc
    .option(fc.oneof({ weight: 3, arbitrary: valid }, { weight: 2, arbitrary: headerText }), {
      freq: p.name === 'x-upstream-authorization' ? 8 : 2,
    })
    .map((v) => (v === null ? [] : [[p.name, v]]));
}

const extraHeader: fc.Arbitrary<[string, string]> = fc.tuple(
  fc.constantFrom(
    'X-Request-Id',
    'Accept',
    'Origin',
    'X-Forwarded-For',
    'Cookie',
    'Accept-Encoding',
    'Expect',
    'Content-Encoding',
    'Idempotency-Key',
  ),
  headerText,
);

/** A well-formed two-message chain carrying hostile text, so chain storage is fuzzed past validation. */
const validChain = fc.tuple(fuzzText, fuzzText, fc.boolean()).map(([question, answer, openai]) =>
  openai
    ? [
        { role: 'user', content: question },
        { role: 'assistant', content: answer },
      ]
    : [
        { role: 'user', content: [{ type: 'text', text: question }] },
        { role: 'assistant', content: [{ type: 'text', text: answer }] },
      ],
);

/** Keywords of the seeded questions ("Total sales by region for 2021"), so SQL recall finds turns. */
const sqlKeywords = fc.constantFrom('sales', 'region 2021', 'total sales', 'android');

/** An execution result in the Denodo form CSV export reads, with hostile cell values. */
const denodoResult = fc
  .array(fc.tuple(fuzzText, fc.oneof(fuzzText, edgeNumbers, fc.constant(null))), { minLength: 1, maxLength: 3 })
  .map((cells) => ({ 'Row 1': cells.map(([columnName, value]) => ({ columnName, value })) }));

/** Requests spread over every operation, public ones and unknown paths included. */
export function fuzzRequests(operations: Operation[], world: FuzzWorld): fc.Arbitrary<FuzzRequest> {
  const unknownPath = fc.tuple(fc.constantFrom('GET', 'POST', 'DELETE'), fuzzText).map(
    ([method, text]): FuzzRequest => ({
      operation: 'unknown path',
      variant: 'unknown-path',
      method,
      target: `/${percentEncode(text)}`,
      headers: [['Authorization', world.users[0]!.authorization]],
    }),
  );
  return fc.oneof(...operations.map((op) => requestArbitrary(op, world)), unknownPath);
}
