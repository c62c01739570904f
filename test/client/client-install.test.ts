// The install instructions of packages/memorychat-client/README.md, run as a user would: the tarball
// packed in this repository, installed into a new project in a temp dir, imported by name there and
// used against the running service. npm runs offline: the dependencies come from npm's cache.
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/service/test-app.js';

const README = path.resolve('packages/memorychat-client/README.md');

/** The registry's tarball URL of the version this repository installed (what npm ci cached). */
function cachedTarballUrl(name: string): string {
  const { version } = JSON.parse(readFileSync(path.resolve('node_modules', name, 'package.json'), 'utf8')) as { version: string };
  return `https://registry.npmjs.org/${name}/-/${name}-${version}.tgz`;
}

describe('the memorychat-client install instructions', () => {
  let scratch: string;
  let service: TestApp;

  beforeAll(async () => {
    scratch = await mkdtemp(path.join(tmpdir(), 'memorychat-client-install-'));
    service = await startTestApp();
  });
  afterAll(async () => {
    await service?.close();
    await rm(scratch, { recursive: true, force: true });
  });

  it('when the README commands are run in a scratch project, then the package installs and its client calls the service', async () => {
    const readme = await readFile(README, 'utf8');
    expect(readme).toContain('npm pack --workspace memorychat-client');
    expect(readme).toContain('npm install /path/to/memorychat/memorychat-client-0.1.0.tgz');

    // The README's first command, in this repository; the tarball goes to the scratch dir instead of the clone's root.
    const [packed] = JSON.parse(
      execFileSync('npm', ['pack', '--workspace', 'memorychat-client', '--json', '--pack-destination', scratch], { encoding: 'utf8' }),
    ) as [{ filename: string }];
    expect(packed.filename).toBe('memorychat-client-0.1.0.tgz');

    const project = path.join(scratch, 'my-bot');
    execFileSync('mkdir', ['-p', project]);
    await writeFile(
      path.join(project, 'package.json'),
      JSON.stringify({ name: 'my-bot', version: '1.0.0', private: true, type: 'module' }),
    );
    // The README's second command. Offline, npm has the dependencies' tarballs in its cache (npm ci put
    // them there) but not their registry metadata, so they are named by the tarball URLs it cached.
    const dependencies = ['openapi-fetch', 'openapi-typescript-helpers'].map(cachedTarballUrl);
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', path.join(scratch, packed.filename), ...dependencies], {
      cwd: project,
      encoding: 'utf8',
    });

    const program = `
      import { createMemorychatClient } from 'memorychat-client';
      const memorychat = createMemorychatClient(process.env.BASE_URL, process.env.TOKEN);
      const stored = await memorychat.POST('/sessions/turns', { body: { question: 'Installed?', answer: 'Yes.' } });
      const { data } = await memorychat.GET('/sessions');
      console.log(JSON.stringify({ status: stored.response.status, sessions: data.sessions.length, from: import.meta.resolve('memorychat-client') }));
    `;
    await writeFile(path.join(project, 'bot.mjs'), program);
    // Asynchronously: the service answering it runs in this process.
    const { stdout: out } = await promisify(execFile)('node', ['bot.mjs'], {
      cwd: project,
      encoding: 'utf8',
      env: { ...process.env, BASE_URL: service.baseUrl, TOKEN: service.token('installed-bot') },
    });
    const result = JSON.parse(out.trim());
    expect(result).toMatchObject({ status: 201, sessions: 1 });
    expect(result.from).toContain(path.join(project, 'node_modules', 'memorychat-client', 'dist', 'index.js'));
  });
});
