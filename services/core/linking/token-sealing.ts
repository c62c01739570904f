import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { SealingKey } from '../../config/account-link-keys.js';

/*
 * Tokens of linked accounts at rest, and the state of a sign-in in flight: AES-256-GCM under the first
 * of ACCOUNT_LINK_KEYS, with the key's id written in front of each sealed value, so that after a
 * rotation the old values still open with the key they name (docs/account-linking.md#key-rotation).
 * `context` is authenticated with the value (GCM's additional data): a value sealed for one user, or
 * for one purpose, does not open as another's.
 *
 * Layout: version (1 byte) · key id length (1 byte) · key id · IV (12 bytes) · tag (16 bytes) · ciphertext.
 */

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A sealed value that no configured key opens: its key was removed, or the value was altered or moved. */
export class UnsealError extends Error {
  override name = 'UnsealError';
}

export function seal(keys: readonly SealingKey[], value: unknown, context: string): Buffer {
  const current = keys[0];
  if (!current) throw new Error('no sealing key');
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', current.key, iv);
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  const id = Buffer.from(current.id, 'utf8');
  return Buffer.concat([Buffer.from([VERSION, id.length]), id, iv, cipher.getAuthTag(), ciphertext]);
}

/** The key id a sealed value names (what a rotation asks of each row). */
export function sealedKeyId(sealed: Buffer): string {
  if (sealed.length < 2 || sealed[0] !== VERSION) throw new UnsealError('not a sealed value of this version');
  return sealed.subarray(2, 2 + sealed[1]!).toString('utf8');
}

export function unseal<T>(keys: readonly SealingKey[], sealed: Buffer, context: string): T {
  const id = sealedKeyId(sealed);
  const key = keys.find((k) => k.id === id);
  if (!key) throw new UnsealError(`sealed with key "${id}", which is not among the configured keys`);
  const ivAt = 2 + sealed[1]!;
  const tagAt = ivAt + IV_BYTES;
  const dataAt = tagAt + TAG_BYTES;
  if (sealed.length < dataAt) throw new UnsealError('the sealed value is cut short');
  const iv = sealed.subarray(ivAt, tagAt);
  const tag = sealed.subarray(tagAt, dataAt);
  const decipher = createDecipheriv('aes-256-gcm', key.key, iv);
  decipher.setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(tag);
  try {
    const plain = Buffer.concat([decipher.update(sealed.subarray(dataAt)), decipher.final()]);
    return JSON.parse(plain.toString('utf8')) as T;
  } catch {
    throw new UnsealError(`the value does not open with key "${id}" for this context: altered, or sealed for another`);
  }
}

/** Sealed for `base64url` transport (a sign-in's `state`). */
export function sealToText(keys: readonly SealingKey[], value: unknown, context: string): string {
  return seal(keys, value, context).toString('base64url');
}

export function unsealText<T>(keys: readonly SealingKey[], text: string, context: string): T {
  return unseal<T>(keys, Buffer.from(text, 'base64url'), context);
}
