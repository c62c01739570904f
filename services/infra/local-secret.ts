import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * The HS256 secret of local mode (no JWT configuration outside production), created once and kept
 * under DATA_DIR so tokens stay valid across restarts.
 */
export async function loadOrCreateLocalSecret(dataDir: string): Promise<string> {
  const file = path.resolve(dataDir, 'local-jwt-secret');
  try {
    const existing = (await readFile(file, 'utf8')).trim();
    if (existing.length >= 32) return existing;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(dataDir, { recursive: true });
  const secret = randomBytes(48).toString('base64url');
  await writeFile(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}
