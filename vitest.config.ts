import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts', 'test/support/build-setup.ts'],
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Each file starts its own embedded Postgres process; two cores run two files at a time.
    maxWorkers: 2,
  },
});
