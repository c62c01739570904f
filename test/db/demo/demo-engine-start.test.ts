// The embedded demo engine (SQL_DATABASE_URL=embedded-demo) loads its dataset as part of its start. On a
// busy machine a fresh engine answered its first connection later than SQL_POOL_WAIT_MS, the wait a
// statement has for the engine's one connection, and the start failed with pg's "connection timeout".
import { describe, expect, it } from 'vitest';
import { startDemoEngine } from '../../../services/db/demo/demo-engine.js';

describe('the embedded demo engine at start', () => {
  it('when a statement may wait only 1 ms for the connection, then the engine still starts and loads the demo', async () => {
    const engine = await startDemoEngine({ waitMs: 1 });
    try {
      expect(engine.pid()).toBeGreaterThan(0);
    } finally {
      await engine.close();
    }
  });
});
