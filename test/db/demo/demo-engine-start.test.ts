// The embedded demo engine (SQL_DATABASE_URL=embedded-demo) loads its dataset as part of its start. On a
// busy machine a fresh engine answered its first connection later than SQL_POOL_WAIT_MS, the wait a
// statement has for the engine's one connection, and the start failed with pg's "connection timeout".
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type DemoEngine, startDemoEngine } from '../../../services/db/demo/demo-engine.js';

describe('the embedded demo engine at start', () => {
  it('when a statement may wait only 1 ms for the connection, then the engine still starts and loads the demo', async () => {
    const engine = await startDemoEngine({ waitMs: 1 });
    try {
      expect(engine.pid()).toBeGreaterThan(0);
    } finally {
      await engine.close();
    }
  });

  describe('its image', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'memorychat-demo-image-test-'));
    const imageFile = path.join(dir, 'demo.tar');
    const warnings: string[] = [];
    const start = () => startDemoEngine({ waitMs: 10_000, imageFile, log: { warn: (_obj, msg) => warnings.push(msg) } });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    /** What a fresh engine must hold: the dataset, and the reader role without set_config. */
    async function contents(engine: DemoEngine) {
      const client = await engine.connect();
      try {
        const { rows } = await client.query(
          `SELECT (SELECT count(*)::int FROM demo.sales) AS sales, (SELECT sum(amount)::text FROM demo.sales) AS amount,
                  has_function_privilege($1, 'pg_catalog.set_config(text, text, boolean)', 'EXECUTE') AS may_set_config`,
          [engine.role],
        );
        return rows[0];
      } finally {
        client.release();
      }
    }

    it('when an engine has loaded the demo, then the next one (and a restart) starts from its image with the same contents; a broken image is loaded afresh and replaced', async () => {
      const first = await start();
      const loaded = await contents(first).finally(() => first.close());
      expect(loaded).toMatchObject({ may_set_config: false });
      expect(loaded.sales).toBeGreaterThan(1000);
      const kept = statSync(imageFile);

      const second = await start();
      try {
        expect(await contents(second)).toEqual(loaded);
        await second.restart();
        expect(await contents(second)).toEqual(loaded);
      } finally {
        await second.close();
      }
      // Started from the image: it was not written again.
      expect(statSync(imageFile).mtimeMs).toBe(kept.mtimeMs);
      expect(warnings).toEqual([]);

      writeFileSync(imageFile, 'not a tarball');
      const third = await start();
      try {
        expect(await contents(third)).toEqual(loaded);
      } finally {
        await third.close();
      }
      expect(warnings).toEqual(['the demo engine did not start from its image; it is loaded afresh']);
      expect(statSync(imageFile).size).toBe(kept.size);
    }, 120_000);
  });
});
