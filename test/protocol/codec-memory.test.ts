import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CODEC_OPTIONS, encodeUpdate } from '../../src/protocol/index.ts';
import { codecFixture, randomUpdate } from '../helpers/codec-fixture.ts';

// A full collection before each RSS reading, whatever flags the test worker started with: the
// flag makes new contexts carry `gc`, and the collection it runs is of the whole isolate.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

describe('codec memory', () => {
  it('encoding 2,000 blocks in a loop keeps RSS flat (every SEAL object is deleted)', async () => {
    const fx = await codecFixture(1);
    const perBlock = fx.ctx.slots * 3; // 8-bit, 32 contributors of headroom: 3 lanes per slot
    const update = randomUpdate(perBlock * 40, 11, 0.05);
    const encodeBlocks = (n: number) => {
      let done = 0;
      while (done < n) {
        const e = encodeUpdate({
          update,
          residual: null,
          credentials: fx.sites[0]!,
          context: fx.context,
          options: DEFAULT_CODEC_OPTIONS,
          exampleWeight: 1,
        });
        done += e.blocks.length;
      }
      return done;
    };
    encodeBlocks(200); // warm-up: SEAL's heap and V8 settle
    gc();
    const before = process.memoryUsage().rss;
    const done = encodeBlocks(2000);
    gc();
    const growth = process.memoryUsage().rss - before;
    expect(done).toBeGreaterThanOrEqual(2000);
    // 2,000 leaked ciphertexts would hold > 128 MiB (64 KiB seeded + plaintext each).
    expect(growth).toBeLessThan(48 * 1024 * 1024);
  });
});
