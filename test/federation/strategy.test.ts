import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createStrategy,
  decodeStrategyState,
  encodeStrategyState,
  meanFromSum,
  resolveStrategyConfig,
  STRATEGY_STATE_HEADER_BYTES,
  type StrategyConfig,
  type StrategyState,
  weightedMeanDelta,
} from '../../federation/index.ts';
import { InvalidArgumentError, UpdateError } from '../../src/errors/index.ts';

const f = Math.fround;
const f32 = (values: number[]): Float32Array => Float32Array.from(values);

/** Shared 3-parameter fixture: w_0 and the mean deltas of rounds 1–3 (all exact in float32). */
const W0 = [0.5, -1.25, 2];
const DELTAS = [
  [0.25, -0.5, 1],
  [-0.125, 0.75, 0],
  [0.0625, -0.25, -2],
];

interface Trace {
  parameters: number[][];
  m: number[][];
  v: number[][];
  states: StrategyState[];
}

function run(config: StrategyConfig): Trace {
  const strategy = createStrategy(config);
  let w = f32(W0);
  let state: StrategyState | null = null;
  const trace: Trace = { parameters: [], m: [], v: [], states: [] };
  for (const d of DELTAS) {
    const out = strategy.apply(w, f32(d), state);
    w = out.parameters;
    state = out.state;
    trace.parameters.push(Array.from(w));
    trace.m.push(Array.from(state.m));
    trace.v.push(Array.from(state.v));
    trace.states.push(state);
  }
  return trace;
}

describe('FedAvg', () => {
  it('η = 0.5 over three rounds (hand-computed, exact dyadics)', () => {
    // w1 = w0 + 0.5·Δ1 = [0.5+0.125, −1.25−0.25, 2+0.5]   = [0.625, −1.5, 2.5]
    // w2 = w1 + 0.5·Δ2 = [0.625−0.0625, −1.5+0.375, 2.5+0] = [0.5625, −1.125, 2.5]
    // w3 = w2 + 0.5·Δ3 = [0.5625+0.03125, −1.125−0.125, 2.5−1] = [0.59375, −1.25, 1.5]
    const t = run({ name: 'fedavg', serverLearningRate: 0.5 });
    expect(t.parameters).toEqual([
      [0.625, -1.5, 2.5],
      [0.5625, -1.125, 2.5],
      [0.59375, -1.25, 1.5],
    ]);
    expect(t.states.map((s) => s.step)).toEqual([1, 2, 3]);
    expect(t.m).toEqual([[], [], []]);
  });

  it('η defaults to 1: w + Δ̄', () => {
    // w1 = [0.75, −1.75, 3]; w2 = [0.625, −1, 3]; w3 = [0.6875, −1.25, 1]
    expect(run({ name: 'fedavg' }).parameters).toEqual([
      [0.75, -1.75, 3],
      [0.625, -1, 3],
      [0.6875, -1.25, 1],
    ]);
  });

  it('computes w + η·d in float64 and rounds once to float32', () => {
    // η·d = (1 + 2^−26)·2^−24 = 2^−24 + 2^−50, and 1 + 2^−24 + 2^−50 are exact in float64; the
    // latter is above the float32 midpoint between 1 and 1 + 2^−23, so it rounds up. Rounding η·d to
    // float32 first would give 2^−24, and 1 + 2^−24 is a tie that rounds (to even) down to 1.
    const s = createStrategy({ name: 'fedavg', serverLearningRate: 1 + 2 ** -26 });
    const out = s.apply(f32([1]), f32([2 ** -24]), null);
    expect(out.parameters[0]).toBe(1 + 2 ** -23);
  });
});

describe('weightedMeanDelta and meanFromSum', () => {
  it('weights unequal clients by their example counts', () => {
    // n = [1, 3]: Δ̄ = (1·[1, −2, 4] + 3·[−1, 2, 0]) / 4 = [−2, 4, 4] / 4 = [−0.5, 1, 1]
    const mean = weightedMeanDelta([f32([1, -2, 4]), f32([-1, 2, 0])], [1, 3]);
    expect(Array.from(mean)).toEqual([-0.5, 1, 1]);
    // Unweighted would be [0, 0, 2]: the weights matter.
    expect(Array.from(weightedMeanDelta([f32([1, -2, 4]), f32([-1, 2, 0])], [1, 1]))).toEqual([0, 0, 2]);
  });

  it('accumulates in float64 and rounds once', () => {
    // (1·1 + 1·2^−30 + 1·(−1)) / 3 = 2^−30 / 3: a float32 running sum would lose 2^−30 against 1.
    const mean = weightedMeanDelta([f32([1]), f32([2 ** -30]), f32([-1])], [1, 1, 1]);
    expect(mean[0]).toBe(f(2 ** -30 / 3));
  });

  it('meanFromSum divides a weighted sum by the total weight', () => {
    // Σ n_k Δ_k for the case above is [−2, 4, 4]; / 4 = [−0.5, 1, 1]
    expect(Array.from(meanFromSum(f32([-2, 4, 4]), 4))).toEqual([-0.5, 1, 1]);
    expect(meanFromSum(f32([1]), 3)[0]).toBe(f(1 / 3));
  });

  it('rejects bad inputs, naming them', () => {
    expect(() => weightedMeanDelta([], [])).toThrow(/deltas must hold at least one/);
    expect(() => weightedMeanDelta([f32([1, 2])], [1, 2])).toThrow('weights length 2, deltas length 1');
    expect(() => weightedMeanDelta([f32([1, 2]), f32([1])], [1, 1])).toThrow(
      'deltas[1] length 1, deltas[0] length 2',
    );
    expect(() => weightedMeanDelta([f32([1]), f32([1])], [1, 0])).toThrow(/weights\[1\] is 0/);
    expect(() => weightedMeanDelta([f32([1])], [Number.NaN])).toThrow(/weights\[0\] is NaN/);
    expect(() => weightedMeanDelta([f32([1, 2]), f32([0, Number.POSITIVE_INFINITY])], [1, 1])).toThrow(
      /deltas\[1\]\[1\] is Infinity/,
    );
    expect(() => meanFromSum(f32([1]), 0)).toThrow(/divisor is 0/);
    expect(() => meanFromSum(f32([1]), Number.POSITIVE_INFINITY)).toThrow(/divisor is Infinity/);
    expect(() => meanFromSum(f32([1, Number.NaN]), 2)).toThrow(/sum\[1\] is NaN/);
  });

  it('property: FedAvg with η = 1 on the weighted mean delta is the weighted mean of the client models', () => {
    const value = fc.float({ min: -100, max: 100, noNaN: true, noDefaultInfinity: true });
    const arb = fc.integer({ min: 1, max: 8 }).chain((n) =>
      fc.record({
        w: fc.array(value, { minLength: n, maxLength: n }),
        clients: fc.array(
          fc.record({
            model: fc.array(value, { minLength: n, maxLength: n }),
            weight: fc.integer({ min: 1, max: 10_000 }),
          }),
          { minLength: 1, maxLength: 6 },
        ),
      }),
    );
    const fedavg = createStrategy({ name: 'fedavg' });
    fc.assert(
      fc.property(arb, ({ w, clients }) => {
        const global = f32(w);
        const deltas = clients.map((c) => f32(c.model.map((x, i) => x - global[i]!)));
        const weights = clients.map((c) => c.weight);
        const next = fedavg.apply(global, weightedMeanDelta(deltas, weights), null).parameters;
        const total = weights.reduce((a, b) => a + b, 0);
        for (let i = 0; i < w.length; i++) {
          const expected = clients.reduce((s, c) => s + c.weight * f(c.model[i]!), 0) / total;
          // Three float32 roundings (Δ_k, Δ̄, w + Δ̄), each ≤ 2^−24 of a magnitude ≤ 2·max|x|.
          const scale = Math.max(Math.abs(global[i]!), ...clients.map((c) => Math.abs(c.model[i]!)));
          expect(Math.abs(next[i]! - expected)).toBeLessThanOrEqual(8 * 2 ** -24 * scale + 2 ** -140);
        }
      }),
      { numRuns: 300, seed: 42 },
    );
  });
});

describe('FedProx', () => {
  it('passes μ to the clients and takes FedAvg’s server step', () => {
    const prox = createStrategy({ name: 'fedprox', mu: 0.1, serverLearningRate: 0.5 });
    expect(prox.clientProximalMu).toBe(0.1);
    expect(createStrategy({ name: 'fedprox' }).clientProximalMu).toBe(0.01);
    expect(createStrategy({ name: 'fedavg' }).clientProximalMu).toBe(0);
    expect(createStrategy({ name: 'fedadam' }).clientProximalMu).toBe(0);
    expect(run({ name: 'fedprox', mu: 0.1, serverLearningRate: 0.5 }).parameters).toEqual(
      run({ name: 'fedavg', serverLearningRate: 0.5 }).parameters,
    );
    const w = f32([0.1, 0.2, 0.3]);
    const d = f32([0.01, -0.07, 1e-5]);
    expect(prox.apply(w, d, null).parameters).toEqual(
      createStrategy({ name: 'fedavg', serverLearningRate: 0.5 }).apply(w, d, null).parameters,
    );
    expect(prox.apply(w, d, null).state.strategy).toBe('fedprox');
  });
});

// Adaptive fixtures use the defaults η = 0.01, β1 = 0.9, β2 = 0.99, τ = 1e-3, so m_0 = 0 and
// v_0 = f32(1e-6). Each stored value is the float32 nearest to the exact expression of the float32
// inputs (checked in float64 and at 300-bit precision; both agree). Values are float32 bits printed
// as float64 decimals.
describe('FedAdam', () => {
  it('three rounds match the hand/float64 computation', () => {
    // t = 1, i = 0: m = 0.1·0.25 = 0.025; v = 0.99·1e-6 + 0.01·0.0625 = 6.2599e-4;
    //   w = 0.5 + 0.01·0.025 / (√6.2599e-4 + 1e-3) = 0.5 + 2.5e-4 / 0.0260198 = 0.509608
    // t = 2, i = 2 (Δ̄ = 0): m = 0.9·0.1 = 0.09; v = 0.99·0.01000099 = 0.00990098;
    //   w = 2.0099006 + 0.01·0.09 / (0.0995037 + 0.001) = 2.0099006 + 0.0089552 = 2.0188556
    // t = 3, i = 2 (Δ̄ = −2): m = 0.9·0.09 − 0.1·2 = −0.119; v = 0.99·0.00990098 + 0.01·4 = 0.0498020;
    //   w = 2.0188556 − 0.00119 / (0.2231636 + 0.001) = 2.0188556 − 0.0053086 = 2.0135469
    const t = run({ name: 'fedadam' });
    expect(t.m).toEqual([
      [0.02500000037252903, -0.05000000074505806, 0.10000000149011612],
      [0.010000000707805157, 0.029999999329447746, 0.09000000357627869],
      [0.015250000171363354, 0.0019999993965029716, -0.11899999529123306],
    ]);
    expect(t.v).toEqual([
      [0.0006259899819269776, 0.0025009899400174618, 0.010000989772379398],
      [0.0007759800646454096, 0.008100979961454868, 0.009900979697704315],
      [0.0008072827477008104, 0.008644970133900642, 0.04980197176337242],
    ]);
    expect(t.parameters).toEqual([
      [0.5096080899238586, -1.259801983833313, 2.0099005699157715],
      [0.5130735039710999, -1.2565054893493652, 2.018855571746826],
      [0.5182583332061768, -1.256292700767517, 2.013546943664551],
    ]);
  });

  it('steps with the stored float32 m_t and v_t, so a resumed state gives the same bits', () => {
    // Found by search: here w + η·m/(√v + τ) with the unrounded float64 m would give
    // 0.0011744399089366198 instead.
    const s = createStrategy({ name: 'fedadam' });
    const state: StrategyState = {
      strategy: 'fedadam',
      step: 9,
      m: f32([-0.2863624691963196]),
      v: f32([0.5283939838409424]),
    };
    const out = s.apply(f32([0.006064976565539837]), f32([-0.9983105659484863]), state);
    expect(out.parameters[0]).toBe(0.0011744400253519416);
    expect(out.state.step).toBe(10);
  });

  it('starts from m_0 = 0, v_0 = f32(τ²); null state equals the initial state', () => {
    const s = createStrategy({ name: 'fedadam', tau: 0.1 });
    const init = s.initialState(3);
    expect(init.step).toBe(0);
    expect(Array.from(init.m)).toEqual([0, 0, 0]);
    expect(Array.from(init.v)).toEqual([f(0.01), f(0.01), f(0.01)]);
    const w = f32(W0);
    const d = f32(DELTAS[0]!);
    expect(s.apply(w, d, null)).toEqual(s.apply(w, d, init));
    // No bias correction: after one step m_1 = (1 − β1)·Δ̄, not Δ̄.
    expect(s.apply(w, d, null).state.m[0]).toBe(f(0.1 * 0.25));
  });
});

describe('FedYogi', () => {
  it('three rounds match the hand/float64 computation', () => {
    // t = 1, i = 0: v_0 − Δ̄² < 0 so v = 1e-6 + 0.01·0.0625 = 6.26e-4 (Adam: 6.2599e-4)
    // t = 2, i = 2 (Δ̄ = 0): sign(v − 0)·0 = 0 so v stays 0.010001 (Adam decays it to 0.0099010)
    // t = 3, i = 2 (Δ̄ = −2): v = 0.010001 + 0.01·4 = 0.050001; w = 2.0188110 − 0.00119/0.2246128
    const t = run({ name: 'fedyogi' });
    expect(t.m).toEqual(run({ name: 'fedadam' }).m);
    expect(t.v).toEqual([
      [0.0006259999936446548, 0.002500999951735139, 0.010001000016927719],
      [0.0007822500192560256, 0.008125999942421913, 0.010001000016927719],
      [0.0008213125402107835, 0.00875100027769804, 0.05000099912285805],
    ]);
    expect(t.parameters).toEqual([
      [0.5096079707145691, -1.259801983833313, 2.0099005699157715],
      [0.5130599737167358, -1.2565104961395264, 2.018810987472534],
      [0.5182018280029297, -1.2562990188598633, 2.0135128498077393],
    ]);
  });

  it('leaves v unchanged when v_{t−1} = Δ̄² (sign 0)', () => {
    const yogi = createStrategy({ name: 'fedyogi' });
    const state: StrategyState = { strategy: 'fedyogi', step: 4, m: f32([0]), v: f32([0.25]) };
    expect(yogi.apply(f32([0]), f32([0.5]), state).state.v[0]).toBe(0.25);
    expect(yogi.apply(f32([0]), f32([-0.5]), state).state.v[0]).toBe(0.25);
  });

  it('keeps v larger than Adam after a burst (more cautious steps), as documented', () => {
    // Round 1: Δ̄ = 1 (Δ̄² > v_0): Yogi v grows by (1 − β2)·Δ̄², Adam's by (1 − β2)·(Δ̄² − v_0).
    // Rounds 2–4: Δ̄ = 0.01 (Δ̄² < v/2): Yogi v shrinks by (1 − β2)·Δ̄² only; Adam's by (1 − β2)(v − Δ̄²).
    const deltas = [1, 0.01, 0.01, 0.01];
    const adam = createStrategy({ name: 'fedadam', beta2: 0.5 });
    const yogi = createStrategy({ name: 'fedyogi', beta2: 0.5 });
    let a = { parameters: f32([0]), state: adam.initialState(1) };
    let y = { parameters: f32([0]), state: yogi.initialState(1) };
    for (const d of deltas) {
      const wa = a.parameters[0]!;
      const wy = y.parameters[0]!;
      a = adam.apply(a.parameters, f32([d]), a.state);
      y = yogi.apply(y.parameters, f32([d]), y.state);
      expect(y.state.v[0]!).toBeGreaterThan(a.state.v[0]!);
      expect(Math.abs(y.parameters[0]! - wy)).toBeLessThan(Math.abs(a.parameters[0]! - wa));
    }
    // Yogi's v after the burst: 1e-6 + 0.5 − 3·0.5·1e-4 ≈ 0.49985; Adam's: ≈ 0.5/8 + small.
    expect(y.state.v[0]).toBeCloseTo(0.49985, 5);
    expect(a.state.v[0]).toBeCloseTo(0.5 / 8 + 0.5 * 1e-4 * (1 / 4 + 1 / 2 + 1), 6);
  });
});

describe('purity and determinism', () => {
  for (const name of ['fedavg', 'fedprox', 'fedadam', 'fedyogi'] as const) {
    it(`${name} never modifies its inputs and returns fresh arrays`, () => {
      const s = createStrategy({ name });
      const w = f32(W0);
      const d = f32(DELTAS[0]!);
      const first = s.apply(w, d, null).state;
      const snapshot = {
        w: Array.from(w),
        d: Array.from(d),
        m: Array.from(first.m),
        v: Array.from(first.v),
        step: first.step,
      };
      const out = s.apply(w, d, first);
      expect({
        w: Array.from(w),
        d: Array.from(d),
        m: Array.from(first.m),
        v: Array.from(first.v),
        step: first.step,
      }).toEqual(snapshot);
      expect(out.parameters.buffer).not.toBe(w.buffer);
      expect(out.parameters.buffer).not.toBe(d.buffer);
      if (out.state.m.length > 0) expect(out.state.m.buffer).not.toBe(first.m.buffer);
      // Same inputs, same bits.
      expect(encodeStrategyState(s.apply(w, d, first).state)).toEqual(encodeStrategyState(out.state));
      expect(s.apply(w, d, first).parameters).toEqual(out.parameters);
    });
  }
});

describe('state encoding', () => {
  it('round-trips and resumes bit for bit', () => {
    const yogi = createStrategy({ name: 'fedyogi' });
    const t = run({ name: 'fedyogi' });
    const state = t.states[1]!;
    const bytes = encodeStrategyState(state);
    expect(bytes.length).toBe(STRATEGY_STATE_HEADER_BYTES + 8 * 3);
    expect(Array.from(bytes.subarray(0, 8))).toEqual([0x43, 0x53, 0x53, 0x54, 1, 3, 0, 0]);
    const decoded = decodeStrategyState(bytes);
    expect(decoded).toEqual(state);
    expect(encodeStrategyState(decoded)).toEqual(bytes);
    const w2 = f32(t.parameters[1]!);
    expect(yogi.apply(w2, f32(DELTAS[2]!), decoded).parameters).toEqual(f32(t.parameters[2]!));
    // A view at an offset decodes the same.
    const padded = new Uint8Array(bytes.length + 3);
    padded.set(bytes, 3);
    expect(decodeStrategyState(padded.subarray(3))).toEqual(state);
  });

  it('stateless rules encode to the header alone; −0 survives', () => {
    const s = run({ name: 'fedprox' }).states[2]!;
    const bytes = encodeStrategyState(s);
    expect(bytes.length).toBe(STRATEGY_STATE_HEADER_BYTES);
    expect(decodeStrategyState(bytes)).toEqual(s);
    const neg: StrategyState = { strategy: 'fedadam', step: 7, m: f32([-0]), v: f32([0]) };
    expect(Object.is(decodeStrategyState(encodeStrategyState(neg)).m[0], -0)).toBe(true);
  });

  it('rejects malformed bytes, naming the field', () => {
    const good = encodeStrategyState(run({ name: 'fedadam' }).states[0]!);
    const edit = (at: number, byte: number): Uint8Array => {
      const b = good.slice();
      b[at] = byte;
      return b;
    };
    expect(() => decodeStrategyState(good.subarray(0, 10))).toThrow(
      'state bytes length 10, the header alone is 20',
    );
    expect(() => decodeStrategyState(good.subarray(0, good.length - 1))).toThrow(
      'state bytes length 43, header says 44',
    );
    expect(() => decodeStrategyState(edit(0, 0))).toThrow(/magic/);
    expect(() => decodeStrategyState(edit(4, 2))).toThrow('state format version 2, this build reads 1');
    expect(() => decodeStrategyState(edit(5, 9))).toThrow(/strategy id 9/);
    expect(() => decodeStrategyState(edit(5, 0))).toThrow('state moment length 3, fedavg keeps 0');
    expect(() => decodeStrategyState(edit(6, 1))).toThrow(/reserved field is 1/);
    expect(() => decodeStrategyState(edit(15, 0x01))).toThrow(/exceeds 2\^53/);
    // v[0] := −1.0f (0xbf800000, little-endian)
    const negV = good.slice();
    negV.set([0, 0, 0x80, 0xbf], 20 + 12);
    expect(() => decodeStrategyState(negV)).toThrow(/state\.v\[0\] is -1/);
    const nanM = good.slice();
    nanM.set([0, 0, 0xc0, 0x7f], 20 + 4);
    expect(() => decodeStrategyState(nanM)).toThrow(UpdateError);
    expect(() => decodeStrategyState(nanM)).toThrow(/state\.m\[1\] is NaN/);
  });
});

describe('validation', () => {
  const adam = createStrategy({ name: 'fedadam' });

  it('names length mismatches and non-finite inputs', () => {
    expect(() => adam.apply(new Float32Array(12), new Float32Array(10), null)).toThrow(
      'meanDelta length 10, parameters length 12',
    );
    expect(() => adam.apply(f32([0, 0, 0]), f32([0, Number.NaN, 0]), null)).toThrow(/meanDelta\[1\] is NaN/);
    expect(() => adam.apply(f32([0, 0, Number.NEGATIVE_INFINITY]), f32([0, 0, 0]), null)).toThrow(
      /parameters\[2\] is -Infinity/,
    );
    expect(() => adam.apply([0, 0] as unknown as Float32Array, f32([0, 0]), null)).toThrow(
      'parameters must be a Float32Array',
    );
  });

  it('rejects a state of another rule or shape', () => {
    const w = f32(W0);
    const d = f32(DELTAS[0]!);
    const yogiState = createStrategy({ name: 'fedyogi' }).initialState(3);
    expect(() => adam.apply(w, d, yogiState)).toThrow('state.strategy is fedyogi, this strategy is fedadam');
    expect(() => adam.apply(w, d, adam.initialState(2))).toThrow('state.m length 2, parameters length 3');
    expect(() => adam.apply(w, d, { ...adam.initialState(3), step: 1.5 })).toThrow(
      /state\.step must be an integer/,
    );
    expect(() => adam.apply(w, d, { ...adam.initialState(3), v: f32([1, -1, 1]) })).toThrow(
      /state\.v\[1\] is -1/,
    );
    expect(() => adam.apply(w, d, { ...adam.initialState(3), m: f32([1, Number.NaN, 1]) })).toThrow(
      /state\.m\[1\] is NaN/,
    );
    const avg = createStrategy({ name: 'fedavg' });
    expect(() =>
      avg.apply(w, d, { strategy: 'fedavg', step: 0, m: f32([0, 0, 0]), v: f32([0, 0, 0]) }),
    ).toThrow('state.m length 3, fedavg keeps 0');
  });

  it('refuses results that overflow float32', () => {
    const avg = createStrategy({ name: 'fedavg' });
    const big = f(3e38);
    expect(() => avg.apply(f32([0, big]), f32([0, big]), null)).toThrow(/parameters\[1\] overflows float32/);
  });

  it('checks configuration ranges, naming the field', () => {
    const bad: [StrategyConfig, RegExp][] = [
      [{ name: 'fedadam', beta1: 1 }, /config\.beta1 must be in \[0, 1\), got 1/],
      [{ name: 'fedyogi', beta2: -0.1 }, /config\.beta2 must be in \[0, 1\), got -0\.1/],
      [{ name: 'fedadam', tau: 0 }, /config\.tau must be > 0, got 0/],
      [
        { name: 'fedadam', serverLearningRate: Number.NaN },
        /config\.serverLearningRate must be a finite number/,
      ],
      [{ name: 'fedavg', serverLearningRate: -1 }, /config\.serverLearningRate must be > 0, got -1/],
      [{ name: 'fedprox', mu: -0.5 }, /config\.mu must be ≥ 0, got -0\.5/],
      [{ name: 'fedprox', mu: Number.POSITIVE_INFINITY }, /config\.mu must be a finite number/],
      [{ name: 'fedsgd' } as unknown as StrategyConfig, /config\.name is "fedsgd"/],
      [{ name: 'fedadam', mu: 0.1 } as unknown as StrategyConfig, /config\.mu does not apply to fedadam/],
    ];
    for (const [config, message] of bad) {
      expect(() => createStrategy(config)).toThrow(InvalidArgumentError);
      expect(() => createStrategy(config)).toThrow(message);
    }
    expect(resolveStrategyConfig({ name: 'fedyogi' })).toEqual({
      name: 'fedyogi',
      serverLearningRate: 0.01,
      mu: 0,
      beta1: 0.9,
      beta2: 0.99,
      tau: 1e-3,
    });
    expect(
      resolveStrategyConfig({ name: 'fedadam', beta1: 0, beta2: 0, mu: undefined } as StrategyConfig),
    ).toMatchObject({ beta1: 0, beta2: 0 });
  });
});
