import type { Config } from '../core/config.js';

/** pino options: JSON logs without credentials. */
export function loggerOptions(config: Config) {
  return {
    level: config.LOG_LEVEL,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers["x-upstream-authorization"]',
        'req.headers.cookie',
        '*.apiKey',
        '*.password',
        '*.token',
      ],
      censor: '[redacted]',
    },
  };
}
