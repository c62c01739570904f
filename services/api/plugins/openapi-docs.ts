import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import { AppError } from '../../model/errors.js';

/** Query parameters by which Swagger UI would load a document or configuration from elsewhere. */
const DOCUMENT_PARAMETERS = ['url', 'urls', 'configUrl', 'urls.primaryName'];

/**
 * The OpenAPI document, generated from the route schemas; served at /openapi.json and /docs.
 * It is the same whatever the configuration (the published openapi/openapi.json is the served one),
 * and it passes Redocly's recommended lint (`npm run openapi:lint`).
 */
export default fp(
  async function openapiDocs(app: FastifyInstance, { version }: { version: string }) {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'memorychat',
          version,
          description: 'Conversation memory for question-answering chatbots. Errors are RFC 9457 problem documents.',
        },
        // Relative: the document is served by the service it describes, wherever that is deployed.
        servers: [{ url: '/', description: 'the service serving this document' }],
        components: {
          securitySchemes: {
            bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
            apiKeyAuth: {
              type: 'apiKey',
              in: 'header',
              name: 'X-Api-Key',
              description:
                'A key from POST /admin/api-keys. With X-Memory-User: <user id> (and the act_for_users permission) it acts for that user.',
            },
          },
        },
      },
      refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
      transform: ({ schema, url }) => ({ schema: schema && withOptionalDefaults(schema), url }),
    });
    // Swagger UI's routes take no route options of ours: mark them public where they are made,
    // so auth and the rate limit need no special case for them. A link to /docs/?url=<elsewhere>
    // would show another document under this service's name, with the token typed into "Authorize"
    // sent wherever it says. Swagger UI reads no configuration from its query by default
    // (queryConfigEnabled: false); such a link is refused outright all the same, by a hook of these
    // routes only, so that no other request pays for the check.
    app.addHook('onRoute', (route) => {
      if (route.url !== '/docs' && !route.url.startsWith('/docs/')) return;
      route.config = { ...route.config, public: true };
      route.onRequest = [refuseOtherDocuments, ...hooksOf(route.onRequest)];
    });
    // persistAuthorization: the token typed into "Authorize" survives a reload (kept in the browser's localStorage).
    await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list', persistAuthorization: true } });
    app.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());
  },
  { name: 'openapi-docs' },
);

function refuseOtherDocuments(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
  const query = new URLSearchParams(request.url.split('?')[1] ?? '');
  const named = DOCUMENT_PARAMETERS.find((name) => query.has(name));
  done(named ? new AppError('validation-failed', `the docs show this service's own document; "${named}" is not accepted`) : undefined);
}

function hooksOf<T>(hooks: T | T[] | undefined): T[] {
  return hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];
}

type QuerySchema = { properties?: Record<string, { default?: unknown }>; required?: string[] };

/**
 * A query parameter with a default may be left out: the validator fills it in (so handlers still see
 * it as always set), but TypeBox lists it as required, and the document must not.
 */
function withOptionalDefaults<T extends { querystring?: unknown }>(schema: T): T {
  const query = schema.querystring as QuerySchema | undefined;
  if (!query?.properties || !query.required) return schema;
  const properties = query.properties;
  const required = query.required.filter((name) => properties[name]?.default === undefined);
  return { ...schema, querystring: { ...query, required } };
}
