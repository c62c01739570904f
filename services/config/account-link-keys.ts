import { readFileSync } from 'node:fs';

/** A key that seals linked accounts' tokens (AES-256-GCM), named so each sealed value says which key opens it. */
export interface SealingKey {
  id: string;
  key: Buffer;
}

const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;
const KEY_BYTES = 32;

/**
 * ACCOUNT_LINK_KEYS (or the file ACCOUNT_LINK_KEYS_FILE names, e.g. a Kubernetes Secret mounted as a
 * volume): `id:base64` entries separated by commas or line breaks, 32 random bytes each
 * (`openssl rand -base64 32`). The first seals; all of them open, so a new key goes first and the
 * old ones stay listed until no row uses them (docs/account-linking.md#key-rotation).
 */
export function parseSealingKeys(text: string): SealingKey[] {
  const entries = text
    .split(/[,\n]/)
    .map((entry) => entry.trim())
    .filter(Boolean);
  if (!entries.length) throw new Error('lists no key');
  const keys = entries.map((entry) => {
    const colon = entry.indexOf(':');
    const id = entry.slice(0, colon);
    if (colon < 1 || !KEY_ID.test(id)) {
      throw new Error(
        `each key is "id:base64", the id of letters, digits, ".", "_" or "-" (got an entry starting "${entry.slice(0, 8)}…")`,
      );
    }
    const key = Buffer.from(entry.slice(colon + 1), 'base64');
    if (key.length !== KEY_BYTES)
      throw new Error(`key "${id}" must be ${KEY_BYTES} bytes in base64 (openssl rand -base64 32); it is ${key.length}`);
    return { id, key };
  });
  const ids = keys.map((k) => k.id);
  const repeated = ids.find((id, i) => ids.indexOf(id) !== i);
  if (repeated) throw new Error(`key id "${repeated}" is listed twice`);
  return keys;
}

/** The keys of ACCOUNT_LINK_KEYS_FILE, read once at start. */
export function readSealingKeysFile(file: string): SealingKey[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  return parseSealingKeys(text);
}
