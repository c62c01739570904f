// The areas profile.ts reports the service's CPU in (issue 27: "the profile's before/after per area"):
// a frame's area comes from its file; a native or node: frame (JSON.parse, writev, a Buffer copy) has
// no file of ours, so its time is charged to the area of the nearest caller that has one.

export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/** First match wins; matched against the frame's path under the checkout (dist/...) or node_modules/. */
const AREAS: [RegExp, string][] = [
  [/node_modules\/(pg|pg-protocol|pg-types|pg-pool|pg-cloudflare|postgres-[a-z]+|pgvector)\//, 'pg encode/decode'],
  [/node_modules\/gpt-tokenizer\/|^dist\/services\/core\/text\.js/, 'token counting'],
  [/node_modules\/(fast-jwt|@fastify\/jwt)\/|^dist\/services\/api\/plugins\/auth\.js/, 'JWT'],
  [/node_modules\/undici\//, 'answerer HTTP client'],
  [/^(dist\/)?services\/providers\/answerers\//, 'upstream parse'],
  [/^(dist\/)?services\/providers\/embeddings\//, 'embedding'],
  [/^dist\/services\/db\/sql\.js|^dist\/services\/db\/repositories\/queryable\.js/, 'SQL text, prepared()'],
  [/^dist\/services\/core\/search-terms\//, 'lexical terms'],
  [/node_modules\/prom-client\/|^dist\/services\/core\/metrics\.js/, 'metrics'],
  [/node_modules\/(pino|pino-std-serializers|sonic-boom|thread-stream|fast-redact|quick-format-unescaped)\//, 'logging'],
  [
    /node_modules\/(fastify|@fastify\/[^/]+|find-my-way|avvio|light-my-request|fast-json-stringify|ajv|ajv-formats|fast-uri|fast-querystring|@sinclair\/typebox|toad-cache|process-warning|abstract-logging|rfdc|secure-json-parse)\/|^dist\/services\/api\//,
    'fastify (+ api layer)',
  ],
  [/^dist\/services\//, 'memory logic'],
  // The fair peer runs from source (profile.ts --peer).
  [/node_modules\/(@langchain\/[^/]+|langchain)\//, 'LangChain'],
  [/^scripts\/bench\//, 'peer logic'],
];

const SPECIAL: Record<string, string> = {
  '(garbage collector)': 'GC',
  '(program)': '(program)',
  '(idle)': '(idle)',
  '(root)': '(node internals only)',
};

function areaOfFrame(node: ProfileNode, root: string): string | undefined {
  const { url, functionName } = node.callFrame;
  return url ? areaOfUrl(url, root) : SPECIAL[functionName];
}

/** The area of a frame of `url`; undefined for node:'s own modules, whose time goes to their caller. */
export function areaOfUrl(url: string, root: string): string | undefined {
  if (url.startsWith('node:')) return undefined;
  const file = url.replace(/^file:\/\//, '');
  const local = file.startsWith(root) ? file.slice(root.length) : file;
  const module = /node_modules\/.*$/.exec(local)?.[0] ?? local;
  for (const [pattern, area] of AREAS) if (pattern.test(module)) return area;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(module)?.[1];
  return pkg ? `other: ${pkg}` : `other: ${local.split('/').slice(0, 3).join('/')}`;
}

/** Self time (the profile's microseconds) summed by area, `self` being each node's self time. */
export function selfTimeByArea(nodes: ProfileNode[], self: Map<number, number>, root: string): Map<string, number> {
  const parent = new Map<number, number>();
  for (const n of nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const areaOf = new Map<number, string>();
  const resolve = (id: number): string => {
    const known = areaOf.get(id);
    if (known) return known;
    const node = byId.get(id)!;
    const up = parent.get(id);
    const area = areaOfFrame(node, root) ?? (up === undefined ? '(node internals only)' : resolve(up));
    areaOf.set(id, area);
    return area;
  };
  const areas = new Map<string, number>();
  for (const n of nodes) {
    const t = self.get(n.id) ?? 0;
    if (t) areas.set(resolve(n.id), (areas.get(resolve(n.id)) ?? 0) + t);
  }
  return areas;
}
