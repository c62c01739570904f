// What scripts/build/build.mjs compiles to dist/: every TypeScript source under SOURCE_DIRS, plus the
// command-line entry points in SOURCE_FILES. The Dockerfile's build stage must copy all of them
// (test/k8s/dockerfile.test.ts reads this list).
export const SOURCE_DIRS = ['services'];
export const SOURCE_FILES = ['scripts/migrate.ts', 'scripts/token.ts', 'scripts/citus-rebalance.ts'];
