// Real sites over a real nats-server: three sites train on their own CSV files (different sizes,
// one with its own column names), a fourth with its own PyTorch process; the data contract pins
// the features and classes, the first round gathers the federation's feature statistics under
// encryption, and every later round carries the participants' evaluation of the base model, summed
// under encryption. The accuracy the coordinator prints for a round must be the example-weighted
// mean of what the sites measured themselves.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatRoundLine } from '../../src/cli/commands/coordinator.ts';
import type { CohortConfigInput, SiteConfigInput } from '../../src/config/index.ts';
import { parseSiteConfig } from '../../src/config/index.ts';
import { wdbcPath } from '../../src/data/index.ts';
import { decodeStatisticsParams, standardizerFromTotals } from '../../src/protocol/index.ts';
import { type AgentService, federationGenesis, startAgent } from '../../src/services/agent/index.ts';
import type { CoordinatorSummary } from '../../src/services/coordinator/index.ts';
import { Federation, hex } from '../helpers/federation.ts';

const PYTHON = '/usr/bin/python3';
const TRAINER = fileURLToPath(new URL('../../examples/pytorch/cohort_trainer.py', import.meta.url));
const torch = (() => {
  try {
    execFileSync(PYTHON, ['-c', 'import torch'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** WDBC rows split into site files: 3 CSV sites of different sizes, the rest for the PyTorch site. */
const SIZES = [220, 150, 100];
const ROUNDS = 4;

describe.skipIf(!torch)(
  'real sites: own CSV files, a PyTorch site, federated statistics and evaluation',
  () => {
    let f: Federation;
    let dir: string;
    const agents = new Map<string, AgentService>();
    let summary: CoordinatorSummary;
    let lines: string[];
    const siteConfigs = new Map<string, SiteConfigInput>();

    beforeAll(async () => {
      const text = readFileSync(wdbcPath(), 'utf8').trim().split(/\r?\n/);
      const header = text[0]!.split(',');
      const rows = text.slice(1);
      const features = header.slice(0, -1);
      const contract: CohortConfigInput['data'] = {
        kind: 'tabular',
        features: features.map((name) => ({ name, type: 'number' })),
        label: { name: 'diagnosis', classes: [0, 1] },
        preprocessing: { standardize: 'federated' },
      };
      f = await Federation.create('realsites', {
        sites: 4,
        aggregators: 1,
        overrides: {
          data: contract,
          learning: { model: 'mlp', hidden: [16], epochs: 2, batchSize: 10, learningRate: 0.05 },
          round: {
            heartbeatMs: 200,
            missedHeartbeats: 10,
            deadlineMs: 30_000,
            voteTimeoutMs: 30_000,
            minContributors: 3,
          },
          codec: { bits: 8, clip: 0.05, maxContributors: 32, crcChunkBytes: 16_384 },
          log: { level: 'error' },
        },
      });
      dir = mkdtempSync(join(tmpdir(), 'cohort-real-sites-'));
      let at = 0;
      f.dep.sites.forEach((site, i) => {
        const take = i < SIZES.length ? SIZES[i]! : rows.length - at;
        const part = rows.slice(at, at + take);
        at += take;
        // Site 2 names its columns its own way; the site configuration maps them.
        const own = i === 1 ? header.map((h) => (h === 'diagnosis' ? 'Outcome' : `${h} (site 2)`)) : header;
        const path = join(dir, `${site}.csv`);
        writeFileSync(path, `${own.join(',')}\n${part.join('\n')}\n`);
        const data: SiteConfigInput['data'] = {
          csv: {
            path,
            ...(i === 1
              ? { columns: Object.fromEntries(features.map((h) => [h, `${h} (site 2)`])), label: 'Outcome' }
              : {}),
          },
        };
        const trainer =
          i === SIZES.length
            ? {
                command: [
                  PYTHON,
                  TRAINER,
                  '--csv',
                  path,
                  '--label-column',
                  'diagnosis',
                  '--validation-fraction',
                  '0.2',
                  '--seed',
                  '1',
                  '--threads',
                  '1',
                ],
                timeoutMs: 120_000,
              }
            : undefined;
        siteConfigs.set(site, {
          data,
          validation: { fraction: 0.2, seed: 1 },
          ...(trainer === undefined ? {} : { trainer }),
        });
      });
      for (const a of f.dep.aggregators) await f.startAggregator(a);
      for (const site of f.dep.sites) {
        const agent = await startAgent(await f.member(site), {
          siteConfig: parseSiteConfig(siteConfigs.get(site)!),
        });
        agents.set(site, agent);
      }
      lines = [];
      summary = await f.runCoordinator(ROUNDS, (e) => {
        if (e.type === 'decision') lines.push(formatRoundLine(e.summary));
      });
    }, 600_000);

    afterAll(async () => {
      for (const agent of agents.values()) await agent.stop().catch(() => undefined);
      await f?.stop();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    it('gathers the statistics first, then commits every training round with all four sites', () => {
      expect(summary.rounds.map((r) => [r.round, r.kind, r.commit, r.contributors])).toEqual([
        [1, 'statistics', true, 4],
        ...Array.from({ length: ROUNDS - 1 }, (_, i) => [i + 2, 'round', true, 4]),
      ]);
      // The PyTorch site weighs in with the rows its own trainer reported.
      const weights = [...agents.values()].map((a) => a.stats().examples);
      expect(weights.reduce((a, b) => a + b, 0)).toBeLessThan(569);
      expect(weights.every((n) => n > 0)).toBe(true);
    });

    it('the statistics commit binds the sums of every site’s training rows, and only the sums', async () => {
      const [stats] = await f.decisions();
      expect(stats!.kind).toBe('statistics');
      expect(hex(stats!.modelHash)).toBe(hex(federationGenesis(f.dep.config).commit.modelHash));
      const totals = decodeStatisticsParams(stats!.params);
      const rows = [...agents.values()].reduce((a, s) => a + s.stats().examples, 0);
      expect(Number(totals.rows)).toBe(rows);
      const { mean, std } = standardizerFromTotals(totals);
      expect(mean.length).toBe(30);
      // radius_mean over WDBC is about 14.1 (σ ≈ 3.5): the sums are of the real rows.
      expect(mean[0]).toBeGreaterThan(12);
      expect(mean[0]).toBeLessThan(16);
      expect(std[0]).toBeGreaterThan(2);
    });

    it('each training round prints the federated evaluation: the example-weighted mean of the sites’ own', async () => {
      const decisions = await f.decisions();
      for (const r of summary.rounds.filter((s) => s.kind === 'round')) {
        const decided = decisions.find((d) => d.round === r.round)!;
        const totals = decided.evaluation!;
        expect(totals, `round ${r.round}`).not.toBeNull();
        expect(hex(totals.model)).toBe(hex(decided.parent));
        // Each site's own figures for that model (what it encrypted into its lanes).
        const own = [...agents.values()].map(
          (a) => a.stats().ownEvaluations.find((e) => e.model === hex(decided.parent))!.evaluation,
        );
        expect(own.every((e) => e !== undefined && e.examples > 0)).toBe(true);
        const examples = own.reduce((a, e) => a + e.examples, 0);
        const weightedAccuracy =
          own.reduce((a, e) => a + (e.correct / e.examples) * e.examples, 0) / examples;
        expect(totals.examples).toBe(examples);
        expect(totals.correct / totals.examples).toBeCloseTo(weightedAccuracy, 12);
        expect(totals.confusion.reduce((a, b) => a + b, 0)).toBe(examples);
        const line = lines.find((l) => l.startsWith(`round ${r.round}:`))!;
        expect(line).toContain(`accuracy ${((100 * totals.correct) / totals.examples).toFixed(2)}%`);
      }
      // Standardized features and four rounds learn the task well.
      const last = decisions.at(-1)!.evaluation!;
      expect(last.correct / last.examples).toBeGreaterThan(0.85);
    });

    it('every site ends on the same committed head', () => {
      const heads = new Set([...agents.values()].map((a) => hex(a.head()!.hash)));
      expect(heads.size).toBe(1);
    });

    it('a site that lost its store replays the chain, statistics commit included, to the same model', async () => {
      const site = f.dep.sites[0]!;
      const head = hex(agents.get(site)!.head()!.hash);
      await agents.get(site)!.stop();
      rmSync(join(f.dep.config.paths.dataDir, site), { recursive: true, force: true });
      const again = await startAgent(await f.member(site), {
        siteConfig: parseSiteConfig(siteConfigs.get(site)!),
      });
      agents.set(site, again);
      expect(hex(again.head()!.hash)).toBe(head);
      expect(again.stats().replayed).toBe(ROUNDS);
    });
  },
);
