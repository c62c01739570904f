// `npm run test:image-node`: the unit tests and the tests that run the compiled service and worker as
// processes, on the Node major that the Docker image runs (the Dockerfile's NODE_IMAGE), where the
// machine's Node may be another (CI's is 20). That Node comes from the npm registry, as npm's own
// `node-linux-<arch>` package of that major, unpacked once into node_modules/.cache/. With
// EXTRA_TOTALS_FILE (.ci/run) the totals reporter adds its counts there, and they join CI's closing line
// as `node-<major>`.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
// What runs the compiled service and worker, their restarts and their database, as the image runs them.
const FILES = [
  'test/api/server/server-start.test.ts',
  'test/api/server/graceful-shutdown.test.ts',
  'test/worker/worker-process.test.ts',
  'test/worker/embedded-with-redis.test.ts',
  'test/api/routes/memory-chat/memory-chat.test.ts',
];

function imageNodeMajor(): number {
  const match = /^ARG NODE_IMAGE=node:(\d+)-/m.exec(readFileSync(path.join(root, 'Dockerfile'), 'utf8'));
  if (!match) throw new Error('Dockerfile: no ARG NODE_IMAGE=node:<major>-… line');
  return Number(match[1]);
}

/** The node binary of `major`: this one when it is that major, else npm's package of it, unpacked once. */
function nodeOf(major: number): string {
  if (Number(process.versions.node.split('.')[0]) === major) return process.execPath;
  const dir = path.join(root, 'node_modules', '.cache', `node-${major}-${process.arch}`);
  const bin = path.join(dir, 'bin', 'node');
  if (existsSync(bin)) return bin;
  const scratch = mkdtempSync(path.join(tmpdir(), 'memorychat-node-'));
  try {
    const [packed] = JSON.parse(
      execFileSync('npm', ['pack', `node-linux-${process.arch}@${major}`, '--json', '--pack-destination', scratch], { encoding: 'utf8' }),
    ) as { filename: string }[];
    mkdirSync(dir, { recursive: true });
    execFileSync('tar', ['xzf', path.join(scratch, packed!.filename), '-C', dir, '--strip-components=1']);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return bin;
}

/** One vitest run on `node`, its totals added to EXTRA_TOTALS_FILE as `node-<major>` (totals-reporter.ts); whether it passed. */
function vitest(node: string, major: number, args: string[]): boolean {
  const reporters = ['--reporter=default', '--reporter=./test/support/vitest/totals-reporter.ts'];
  const run = spawnSync(node, ['node_modules/vitest/vitest.mjs', 'run', ...args, ...reporters], {
    cwd: root,
    stdio: 'inherit',
    env: {
      ...process.env,
      TOTALS_AS: `node-${major}`,
      // Tests that start npm or node by name get this Node too.
      PATH: `${path.dirname(node)}${path.delimiter}${process.env.PATH}`,
    },
  });
  return run.status === 0;
}

const major = imageNodeMajor();
const node = nodeOf(major);
console.log(`test:image-node: ${execFileSync(node, ['--version'], { encoding: 'utf8' }).trim()} (the image's Node ${major})`);
const passed = [vitest(node, major, ['--project', 'unit']), vitest(node, major, ['--project', 'embedded', ...FILES])];
process.exit(passed.every(Boolean) ? 0 : 1);
