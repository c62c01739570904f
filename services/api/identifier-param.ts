import { AppError } from '../model/errors.js';
import { normaliseIdentifier } from '../model/identity.js';

/**
 * A user id an admin route names, by the same rule as a token's (normaliseIdentifier): NFC, so it
 * finds the user whose token carried the same id in another normal form; 400 for an id no token could
 * carry past sign-in.
 */
export function identifierParam(raw: string, field: string): string {
  const rule = normaliseIdentifier(raw);
  if ('id' in rule) return rule.id;
  throw new AppError('validation-failed', `${field} ${rule.problem}`, { errors: [{ field, message: rule.problem }] });
}
