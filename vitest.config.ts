import { defineConfig } from 'vitest/config';

// Tests of pure code: no database, no Redis, no global setup (`npm run test:unit`, a few seconds).
const UNIT = ['test/core/**/*.test.ts', 'test/architecture/**/*.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Each file starts its own embedded Postgres process; two cores run two files at a time.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: UNIT,
          globalSetup: ['test/support/global-setup.ts', 'test/support/build-setup.ts'],
        },
      },
    ],
  },
});
