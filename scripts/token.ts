// `npm run token -- --sub alice [--tenant acme] [--roles memory-admin] [--databases a,b] [--ttl 1h]`:
// signs a development token with JWT_SECRET, or with the local-mode secret kept under DATA_DIR.
import { parseArgs } from 'node:util';
import { createSigner } from 'fast-jwt';
import { loadConfig } from '../services/config/config.js';
import { parseDurationMs } from '../services/config/duration.js';
import { loadOrCreateLocalSecret } from '../services/infra/local-secret.js';

const { values } = parseArgs({
  options: {
    sub: { type: 'string' },
    tenant: { type: 'string' },
    roles: { type: 'string' },
    databases: { type: 'string' },
    ttl: { type: 'string', default: '12h' },
  },
});
if (!values.sub) {
  console.error('usage: npm run token -- --sub <user> [--tenant <tenant>] [--roles a,b] [--databases a,b] [--ttl 12h]');
  process.exit(2);
}
const config = loadConfig(process.env);
if (config.JWT_PUBLIC_KEY || config.JWT_JWKS_URL) {
  console.error('token: this service verifies tokens from your identity provider (JWT_PUBLIC_KEY/JWT_JWKS_URL); get one there');
  process.exit(2);
}
const key = config.JWT_SECRET ?? (await loadOrCreateLocalSecret(config.DATA_DIR));
const claims: Record<string, unknown> = { [config.JWT_USER_CLAIM]: values.sub };
if (values.tenant) claims[config.JWT_TENANT_CLAIM] = values.tenant;
if (values.roles) claims[config.JWT_ROLES_CLAIM] = values.roles.split(',').map((r) => r.trim());
if (values.databases && config.JWT_DATABASES_CLAIM) {
  claims[config.JWT_DATABASES_CLAIM] = values.databases.split(',').map((d) => d.trim());
}
const sign = createSigner({
  key,
  algorithm: 'HS256',
  expiresIn: parseDurationMs(values.ttl!),
  ...(config.JWT_ISSUER ? { iss: config.JWT_ISSUER } : {}),
  ...(config.JWT_AUDIENCE ? { aud: config.JWT_AUDIENCE } : {}),
});
console.log(sign(claims));
