// `npm run test:python`: the Python client's unittest suite (clients/python/tests) against the running
// service, as CI runs it. Starts the stand-in answerQuestion endpoint (scripts/stand-in-answerer.ts)
// and the built service on the embedded database in a temp DATA_DIR with a test JWT secret, runs
// `python3 -m tests` (unittest; its last line is "N passed, N failed, N skipped"), stops both.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const STARTUP_TIMEOUT_MS = 120_000;

/** A port free at this moment: the OS picks it, then it is released for the child to take. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === 'object' && address ? address.port : 0;
}

async function waitUntilUp(url: string, child: ChildProcess, name: string): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode} before it was up`);
    try {
      const response = await fetch(url, {
        method: url.endsWith('answerQuestion') ? 'POST' : 'GET',
        body: url.endsWith('answerQuestion') ? '{}' : undefined,
      });
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${name} was not up within ${STARTUP_TIMEOUT_MS} ms`);
}

const children: ChildProcess[] = [];
const dataDir = await mkdtemp(path.join(tmpdir(), 'memorychat-python-'));
let exitCode = 1;
try {
  const answererPort = await freePort();
  const answerer = spawn(process.execPath, ['--import', 'tsx', 'scripts/stand-in-answerer.ts'], {
    cwd: root,
    env: { ...process.env, PORT: String(answererPort) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(answerer);
  const answerUrl = `http://127.0.0.1:${answererPort}/answerQuestion`;
  await waitUntilUp(answerUrl, answerer, 'the stand-in answerer');

  const port = await freePort();
  const jwtSecret = randomBytes(32).toString('hex');
  const service = spawn(process.execPath, ['dist/services/api/server.js'], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'test',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_DIR: dataDir,
      JWT_SECRET: jwtSecret,
      ANSWER_URL: answerUrl,
      // The stand-in takes any request; the Denodo AI SDK needs the caller's credentials (ANSWER_AUTH's default).
      ANSWER_AUTH: 'none',
      // The suite's users ask quickly; the limit has its own tests.
      RATE_LIMIT_PER_MINUTE: '0',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(service);
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitUntilUp(`${baseUrl}/readyz`, service, 'memorychat');

  const python = spawn('python3', ['-m', 'tests'], {
    cwd: path.join(root, 'clients/python'),
    env: { ...process.env, MEMORYCHAT_URL: baseUrl, MEMORYCHAT_JWT_SECRET: jwtSecret, PYTHONDONTWRITEBYTECODE: '1' },
    stdio: 'inherit',
  });
  exitCode = await new Promise<number>((resolve) => python.on('exit', (code) => resolve(code ?? 1)));
} finally {
  for (const child of children.reverse()) {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
  }
  await rm(dataDir, { recursive: true, force: true });
}
process.exit(exitCode);
