// Long CPU work written once as steps, run at once or sharing the event loop: the same result, the
// same errors, and timers of the same process fire while a long encoding runs.
import { beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_CODEC_OPTIONS,
  decodeAggregate,
  decodeAggregateYielding,
  encodeUpdate,
  encodeUpdateYielding,
  runSteps,
  runStepsYielding,
  type Steps,
  sumUpdates,
} from '../../src/protocol/index.ts';
import { type CodecFixture, codecFixture, randomUpdate } from '../helpers/codec-fixture.ts';

function* busy(steps: number, msEach: number, log: string[]): Steps<number> {
  for (let i = 0; i < steps; i++) {
    const end = performance.now() + msEach;
    while (performance.now() < end) {
      // busy: a step of CPU work
    }
    log.push(`step ${i}`);
    yield;
  }
  return steps;
}

describe('cooperative steps', () => {
  it('runSteps runs to the end without letting a timer in; runStepsYielding lets it in between slices', async () => {
    const log: string[] = [];
    const timer = setInterval(() => log.push('tick'), 1);
    try {
      expect(runSteps(busy(10, 5, log))).toBe(10);
      expect(log).not.toContain('tick');
      log.length = 0;
      expect(await runStepsYielding(busy(10, 5, log), 10)).toBe(10);
      // 50 ms of work in 10 ms slices: the timer ran between steps, not only after the last.
      const firstTick = log.indexOf('tick');
      expect(firstTick).toBeGreaterThan(0);
      expect(firstTick).toBeLessThan(log.indexOf('step 9'));
    } finally {
      clearInterval(timer);
    }
  });

  it('an error thrown by a step rejects the run, and the generator is finished', async () => {
    let cleaned = 0;
    function* failing(): Steps<number> {
      try {
        yield;
        throw new Error('step two failed');
      } finally {
        cleaned++;
      }
    }
    expect(() => runSteps(failing())).toThrow('step two failed');
    await expect(runStepsYielding(failing(), 0)).rejects.toThrow('step two failed');
    expect(cleaned).toBe(2);
  });

  it('refuses a slice that is not a finite number ≥ 0', async () => {
    await expect(runStepsYielding(busy(1, 0, []), Number.NaN)).rejects.toThrow(/sliceMs/);
    await expect(runStepsYielding(busy(1, 0, []), -1)).rejects.toThrow(/sliceMs/);
  });
});

describe('encodeUpdateYielding and decodeAggregateYielding', () => {
  let fx: CodecFixture;
  beforeAll(async () => {
    fx = await codecFixture(2);
  });

  it('encodes the same levels as encodeUpdate, sums and decodes exactly, while timers fire', async () => {
    const update = randomUpdate(1_000_000, 5, 0.05);
    const input = {
      update,
      residual: null,
      credentials: fx.sites[0]!,
      context: fx.context,
      options: DEFAULT_CODEC_OPTIONS,
      exampleWeight: 10,
      roundingSeed: { key0: 1, key1: 2 },
    };
    const atOnce = encodeUpdate(input);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    let shared: Awaited<ReturnType<typeof encodeUpdateYielding>>;
    try {
      shared = await encodeUpdateYielding(input);
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThan(0);
    expect(Buffer.from(shared.levels).equals(Buffer.from(atOnce.levels))).toBe(true);
    expect(Buffer.from(shared.residual.buffer).equals(Buffer.from(atOnce.residual.buffer))).toBe(true);
    expect(shared.blocks.length).toBe(atOnce.blocks.length);
    const aggregate = sumUpdates(fx.ctx, [fx.verifier().verifyUpdate(shared)]);
    const decoded = decodeAggregate(fx.keyset, aggregate, fx.mac());
    const decodedYielding = await decodeAggregateYielding(fx.keyset, aggregate, fx.mac());
    expect(Buffer.from(decodedYielding.laneSums.buffer).equals(Buffer.from(decoded.laneSums.buffer))).toBe(
      true,
    );
    expect(Buffer.from(decodedYielding.sum.buffer).equals(Buffer.from(decoded.sum.buffer))).toBe(true);
    let mismatches = 0;
    for (let i = 0; i < update.length; i++) if (decoded.laneSums[i] !== atOnce.levels[i]) mismatches++;
    expect(mismatches).toBe(0);
  });

  it('rejects bad input as encodeUpdate throws it', async () => {
    const input = {
      update: Float32Array.of(1, Number.NaN),
      residual: null,
      credentials: fx.sites[0]!,
      context: fx.context,
      options: DEFAULT_CODEC_OPTIONS,
      exampleWeight: 1,
    };
    expect(() => encodeUpdate(input)).toThrow(/update/);
    await expect(encodeUpdateYielding(input)).rejects.toThrow(/update/);
  });
});
