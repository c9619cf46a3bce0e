// Differential privacy, attacks and robust rules in `cohort simulate`, on short MNIST 2NN runs
// (2,000 training images, 10 sites): DP training stops exactly where the accountant says the next
// round would pass the budget; a scaling attack wrecks the mean and not the median; the results
// tables are the privacy and attack tables.
import { describe, expect, it } from 'vitest';
import {
  INTEGER_RDP_ORDERS,
  planSkellamDp,
  RdpLedger,
  skellamRoundCharge,
} from '../../federation/privacy/index.ts';
import {
  type RoundMetrics,
  type RunConfig,
  resultsTable,
  runSchema,
  runSimulation,
} from '../../src/simulate/index.ts';

const base = {
  name: 'sim',
  seed: 3,
  rounds: 40,
  evalEvery: 2,
  data: { kind: 'mnist', trainLimit: 2000, testLimit: 1000 },
  partition: { kind: 'iid', sites: 10 },
  model: { kind: '2nn', initSeed: 1 },
  training: { engine: 'cpu', clientFraction: 0.5, epochs: 1, batchSize: 10, learningRate: 0.1 },
};

const run = (over: Record<string, unknown>): RunConfig => runSchema.parse({ ...base, ...over });

async function simulate(cfg: RunConfig) {
  const metrics: RoundMetrics[] = [];
  const summary = await runSimulation(cfg, { onRound: (m) => metrics.push(m) });
  return { summary, metrics };
}

describe('simulation with differential privacy', () => {
  it('stops before the round that would pass the budget, having spent what the accountant counts', async () => {
    const privacy = { noiseMultiplier: 5, epsilon: 2, delta: 1e-5, clipNorm: 0.05 };
    const cfg = run({ name: 'dp', codec: { mode: 'quantized' }, privacy });
    const { summary, metrics } = await simulate(cfg);
    // The accountant on its own: every round charges the same (all 10 sites send a noise share).
    const plan = planSkellamDp({
      clipNorm: 0.05,
      noiseMultiplier: 5,
      expectedContributors: 10,
      dimension: 199_210,
    });
    const ledger = new RdpLedger({ delta: 1e-5, budget: 2, orders: INTEGER_RDP_ORDERS });
    const charge = skellamRoundCharge(plan, 10, 0.5);
    let allowed = 0;
    while (ledger.allows(charge)) {
      ledger.charge(charge);
      allowed++;
    }
    expect(allowed).toBeGreaterThan(1);
    expect(allowed).toBeLessThan(40);
    expect(summary.rounds).toBe(allowed);
    expect(summary.privacy).toMatchObject({ noiseMultiplier: 5, stoppedAtBudget: true });
    expect(summary.privacy!.epsilon).toBeCloseTo(ledger.spent().epsilon, 12);
    expect(summary.privacy!.epsilon).toBeLessThanOrEqual(2);
    expect(metrics.map((m) => m.epsilon)).toEqual([...metrics.map((m) => m.epsilon)].sort((a, b) => a! - b!));
    // Poisson sampling: the number of sampled sites varies from round to round.
    expect(new Set(metrics.map((m) => m.sites)).size).toBeGreaterThan(1);
    const table = resultsTable([cfg], metrics);
    expect(table.split('\n')[0]).toMatch(
      /^\| run +\| privacy +\| noise multiplier +\| ε spent +\| rounds run/,
    );
    expect(table).toContain('ε ≤ 2, δ = 1e-5, clip 0.05');
  }, 120_000);

  it('refuses privacy over float32 updates and a robust rule over private ones, naming the fields', async () => {
    const privacy = { noiseMultiplier: 1, clipNorm: 0.05 };
    await expect(runSimulation(run({ privacy }))).rejects.toThrow(/privacy needs codec.mode quantized/);
    await expect(
      runSimulation(run({ codec: { mode: 'quantized' }, privacy, aggregation: { name: 'median' } })),
    ).rejects.toThrow(/aggregation median looks at each update/);
    expect(() => run({ privacy: { clipNorm: 1 } })).toThrow(/needs epsilon/);
  });
});

describe('simulation under attack', () => {
  it('a scaling attack by 30% of the sites wrecks the mean and not the median', async () => {
    const attack = { kind: 'scaling', fraction: 0.3, factor: 10 };
    const rounds = 10;
    const mean = await simulate(run({ name: 'mean', rounds, attack }));
    const median = await simulate(run({ name: 'median', rounds, attack, aggregation: { name: 'median' } }));
    const clean = await simulate(run({ name: 'clean', rounds }));
    expect(mean.metrics.some((m) => m.attackers > 0)).toBe(true);
    expect(clean.summary.finalAccuracy).toBeGreaterThan(0.8);
    expect(median.summary.finalAccuracy).toBeGreaterThan(0.8);
    expect(mean.summary.finalAccuracy).toBeLessThan(median.summary.finalAccuracy - 0.1);
    const runs = [
      run({ name: 'clean', rounds }),
      run({ name: 'mean', rounds, attack }),
      run({ name: 'median', rounds, attack, aggregation: { name: 'median' } }),
    ];
    const table = resultsTable(runs, [...clean.metrics, ...mean.metrics, ...median.metrics]);
    expect(table.split('\n')[0]).toMatch(/^\| attack +\| FedAvg \(mean\) +\| coordinate median +\|$/);
    expect(table).toContain('| scaling ×10, 30% of sites |');
  }, 180_000);
});
