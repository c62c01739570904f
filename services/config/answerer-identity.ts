import { unreachable } from '../model/unreachable.js';
import type { Config } from './config.js';

/**
 * Who writes the SQL of this service's turns, as stored with each turn (`turns.answerer`, migration
 * 015): /memoryChat recalls across sessions only turns of the same answerer, so SQL written for one
 * schema never reaches the prompt of an answerer of another (docs/design.md §5). Credentials, query
 * strings and fragments are left out: the identity is what the answerer is, not how it is reached.
 */
export function answererIdentity(config: Config): string {
  switch (config.answerBackend) {
    case 'upstream':
      return config.ANSWER_URL ? `upstream ${withoutCredentials(config.ANSWER_URL)}` : 'none';
    case 'sql': {
      const database = config.SQL_DATABASE_URL === 'embedded-demo' ? 'embedded-demo' : withoutCredentials(config.SQL_DATABASE_URL ?? '');
      return `sql ${database} schemas=${[...config.sqlSchemas].sort().join(',')}`;
    }
    case 'none':
      return 'none';
    default:
      return unreachable(config.answerBackend, 'answer backend');
  }
}

function withoutCredentials(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return url;
  }
}
