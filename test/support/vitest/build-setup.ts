// Compiles dist/ once before the tests that start the entry points as `npm start`, `npm run worker` and
// the image run them (compiled JavaScript). Incremental: well under a second when nothing changed.
import { execFileSync } from 'node:child_process';

export default function setup() {
  execFileSync('npm', ['run', '-s', 'build'], { stdio: 'inherit' });
}
