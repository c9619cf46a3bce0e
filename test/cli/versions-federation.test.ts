// `cohort versions …` against a real nats-server with per-member users: the federation log is
// written directly (coordinator key, real log writer) from a hand-built scenario, a site's model
// store holds the scenario's models, and the CLI runs in-process as a site (and as the
// coordinator for rollback). The tests share one log and run in order: the rollback tests append
// rounds, the last test tampers with the log.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSigningKeyPair } from '../../crypto/signature/index.ts';
import { MNIST_2NN, modelLayout } from '../../federation/index.ts';
import type { StrategyState } from '../../federation/strategy/index.ts';
import { layerDiffStats } from '../../src/history/index.ts';
import { type LogRecordBody, openControl, sealControl } from '../../src/protocol/index.ts';
import { federationGenesis } from '../../src/round/index.ts';
import {
  ensureLogStream,
  type FederationLogWriter,
  LOG_ORIGIN,
  type LogRecordInput,
  openLogWriter,
} from '../../src/services/federation-log/index.ts';
import {
  createLocalDeployment,
  type LocalDeployment,
  type MemberContext,
  memberConnectOptions,
  openMember,
} from '../../src/services/index.ts';
import {
  bytesToHex,
  type Commit,
  decodeSafetensors,
  openModelStore,
  parametersFromTensors,
} from '../../src/versions/index.ts';
import { cohort } from '../helpers/run-cli.ts';
import { type HistoryScript, versionsScenario } from '../helpers/versions-history.ts';

const FED = 'vfed';
let dir: string;
let dep: LocalDeployment;
let nc: NatsConnection;
let writer: FederationLogWriter;
let script: HistoryScript;

const state = (step: number): StrategyState => ({
  strategy: 'fedavg',
  step,
  m: new Float32Array(0),
  v: new Float32Array(0),
});
const hex = (c: Commit) => bytesToHex(c.hash);
const config = () => ['--config', dep.configPath];
const asSite = () => [...config(), '--member', 'site-1'];

async function append(records: readonly LogRecordInput[]): Promise<void> {
  for (const r of records) await writer.append(r);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cohort-versions-'));
  dep = await createLocalDeployment({
    dir,
    federation: FED,
    aggregators: 1,
    sites: 2,
    overrides: { round: { deadlineMs: 100, voteTimeoutMs: 100 } },
  });
  const keysDir = join(dir, 'keys');
  nc = await connect(memberConnectOptions(dep.config, 'coordinator'));
  await ensureLogStream(await jetstreamManager(nc), { federation: FED, replicas: 1, maxBytes: 1 << 26 });
  writer = await openLogWriter(nc, {
    federation: FED,
    signer: 'coordinator',
    signing: loadSigningKeyPair(join(keysDir, 'coordinator', 'coordinator.key')),
    start: LOG_ORIGIN,
  });
  const genesis = federationGenesis(dep.config);
  script = versionsScenario(FED, genesis);
  await append(script.records);
  // site-1 holds every model since genesis; site-2 joined from a snapshot of the head (shallow).
  const full = openModelStore(join(dep.config.paths.dataDir, 'site-1'));
  full.init(genesis.commit, genesis.parameters);
  for (let h = 1; h < script.commits.length; h++) {
    full.advance({ commit: script.commits[h]!, parameters: script.models[h]!, strategyState: state(h) });
  }
  const shallow = openModelStore(join(dep.config.paths.dataDir, 'site-2'));
  shallow.jumpTo({ commit: script.head, parameters: script.models[4]!, strategyState: state(4) });
}, 120_000);

afterAll(async () => {
  await nc?.close();
  await dep?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** `cohort ...args`, expecting success and nothing on stderr. */
async function ok(...args: string[]): Promise<string> {
  const r = await cohort(...args);
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return r.stdout;
}

describe('cohort versions on a real log', () => {
  it('log: one line per commit, newest first; --all adds the ABORT; --json; --limit', async () => {
    const lines = (await ok('versions', 'log', ...asSite())).trimEnd().split('\n');
    expect(lines.map((l) => l.split(/\s{2,}/).slice(0, 4))).toEqual([
      ['@4', 'round 5', 'round', hex(script.commits[4]!).slice(0, 12)],
      ['@3', 'round 4', 'rollback', hex(script.commits[3]!).slice(0, 12)],
      ['@2', 'round 2', 'round', hex(script.commits[2]!).slice(0, 12)],
      ['@1', 'round 1', 'round', hex(script.commits[1]!).slice(0, 12)],
      ['@0', 'round 0', 'genesis', hex(script.commits[0]!).slice(0, 12)],
    ]);
    expect(lines[0]).toMatch(/ \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z {2}2 contributors$/);
    expect(lines[1]).toMatch(new RegExp(`to @1 ${hex(script.commits[1]!).slice(0, 12)}$`));
    expect(lines[3]).toMatch(/3 contributors$/);

    const all = (await ok('versions', 'log', '--all', ...asSite())).trimEnd().split('\n');
    expect(all).toHaveLength(6);
    expect(all[2]).toMatch(/^- +round 3 +ABORT +- +\S+ +site-2 voted NO$/);

    const json = JSON.parse(await ok('versions', 'log', '--json', '--all', ...asSite()));
    expect(json.map((j: { kind: string; height: number }) => [j.kind, j.height])).toEqual([
      ['round', 4],
      ['rollback', 3],
      ['abort', 2],
      ['round', 2],
      ['round', 1],
      ['genesis', 0],
    ]);
    expect(json[0].hash).toBe(hex(script.commits[4]!));
    expect(json[0].sequence).toBe(script.records.length);
    expect(typeof json[0].unixMs).toBe('number');
    expect(json[1].rollbackTarget).toBe(hex(script.commits[1]!));
    expect(json[4].contributors.map((c: { site: string }) => c.site)).toEqual(['site-1', 'site-2', 'site-3']);

    const two = (await ok('versions', 'log', '--limit', '2', ...asSite())).trimEnd().split('\n');
    expect(two).toEqual(lines.slice(0, 2));
  });

  it('show: every ref form names the same commits; the snapshot and exclusions are shown', async () => {
    const show = async (ref: string) => JSON.parse(await ok('versions', 'show', ref, '--json', ...asSite()));
    expect((await show('HEAD')).hash).toBe(hex(script.commits[4]!));
    expect((await show('HEAD~1')).hash).toBe(hex(script.commits[3]!));
    expect((await show('@0')).hash).toBe(hex(script.commits[0]!));
    expect((await show(hex(script.commits[1]!))).height).toBe(1);
    const two = await show(hex(script.commits[2]!).slice(0, 8));
    expect(two).toMatchObject({
      height: 2,
      round: 2,
      params: { round: 2, bits: 8, clip: 0.5, strategy: 'fedavg', learningRate: 0.05 },
      missing: ['site-3'],
      exclusions: [{ site: 'site-3', strikes: 1, sinceRound: 2, atHeight: 1, excluded: true }],
      nextClip: 0.25,
      snapshots: [{ sequence: 5, object: 'snapshot-2', bytes: 4002, site: 'site-1' }],
    });
    const text = await ok('versions', 'show', '@3', ...asSite());
    expect(text).toContain(`rollback target:   ${hex(script.commits[1]!)} (@1)`);
  });

  it('show: an unknown or malformed ref is a usage error naming it (exit 2)', async () => {
    for (const [ref, code] of [
      ['HEAD~9', 'REF_UNKNOWN'],
      ['@7', 'REF_UNKNOWN'],
      ['0'.repeat(64), 'REF_UNKNOWN'],
      ['main', 'REF_INVALID'],
    ]) {
      const r = await cohort('versions', 'show', ref!, ...asSite());
      expect(r.status, ref).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(`error [${code}]:`);
      expect(r.stderr).toContain(JSON.stringify(ref));
    }
  });

  it('diff: rounds, parameter changes, rollbacks and per-layer statistics from the site store', async () => {
    const j = JSON.parse(await ok('versions', 'diff', '@1', 'HEAD', '--json', ...asSite()));
    expect(j.rounds.map((r: { round: number; outcome: string }) => [r.round, r.outcome])).toEqual([
      [2, 'commit'],
      [3, 'abort'],
      [4, 'commit'],
      [5, 'commit'],
    ]);
    expect(j.rollbacks).toEqual([
      {
        hash: hex(script.commits[3]!),
        height: 3,
        round: 4,
        target: hex(script.commits[1]!),
        targetHeight: 1,
      },
    ]);
    expect(j.paramChanges.map((p: { param: string; height: number }) => `${p.param}@${p.height}`)).toEqual([
      'clip@2',
      'learningRate@2',
      'clip@3',
      'learningRate@3',
      'bits@4',
      'clip@4',
      'learningRate@4',
    ]);
    expect(j.store).toBe(join(dep.config.paths.dataDir, 'site-1'));
    // Computed here, straight from the models.
    const a = script.models[1]!;
    const b = script.models[4]!;
    const layout = modelLayout(MNIST_2NN);
    expect(j.layers).toHaveLength(3);
    layout.layers.forEach((layer, k) => {
      const parts = [
        [j.layers[k].weight, layer.weightOffset, layer.inputs * layer.outputs],
        [j.layers[k].bias, layer.biasOffset, layer.outputs],
      ] as const;
      for (const [stats, offset, count] of parts) {
        let d2 = 0;
        let a2 = 0;
        let b2 = 0;
        let max = 0;
        for (let i = offset; i < offset + count; i++) {
          d2 += (b[i]! - a[i]!) ** 2;
          a2 += a[i]! ** 2;
          b2 += b[i]! ** 2;
          max = Math.max(max, Math.abs(b[i]! - a[i]!));
        }
        expect(stats.count).toBe(count);
        expect(stats.l2Diff).toBeCloseTo(Math.sqrt(d2), 9);
        expect(stats.l2From).toBeCloseTo(Math.sqrt(a2), 9);
        expect(stats.l2To).toBeCloseTo(Math.sqrt(b2), 9);
        expect(stats.maxAbsDiff).toBe(max);
        expect(stats.maxAbsDiff).toBeGreaterThan(0);
      }
    });
    expect(j.layers).toEqual(JSON.parse(JSON.stringify(layerDiffStats(MNIST_2NN, a, b))));

    const text = await ok('versions', 'diff', 'HEAD', '@1', ...asSite());
    expect(text).toContain('(reversed: the first ref is the later commit)');
    expect(text).toContain('rounds: 4 (3 committed, 1 aborted)');
    expect(text).toContain(`layers (store ${join(dep.config.paths.dataDir, 'site-1')}):`);
    expect(text).toMatch(/layers\.4\.bias +10 +/);
  });

  it('diff: a store lacking a model leaves the statistics out with a note', async () => {
    const store = join(dep.config.paths.dataDir, 'site-2');
    const r = await cohort('versions', 'diff', '@1', 'HEAD', '--json', '--store', store, ...asSite());
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ store: null, layers: null });
    expect(r.stderr).toContain(
      `note: the model store ${store} does not hold the model of commit ${hex(script.commits[1]!)}`,
    );
    const none = await cohort('versions', 'diff', '@1', 'HEAD', '--store', join(dir, 'nowhere'), ...asSite());
    expect(none.status).toBe(2);
    expect(none.stderr).toContain('error [STORE_ABSENT]');
  });

  it('export: writes safetensors that decode to the stored model, with the commit metadata', async () => {
    const out = join(dir, 'model-2.safetensors');
    const text = await ok('versions', 'export', '@2', '--format', 'safetensors', '--out', out, ...asSite());
    expect(text).toContain(
      `exported @2 ${hex(script.commits[2]!).slice(0, 12)} (round 2, model 2nn) to ${out}`,
    );
    const file = decodeSafetensors(readFileSync(out));
    expect(parametersFromTensors(MNIST_2NN, file.tensors)).toEqual(script.models[2]);
    expect(file.metadata).toEqual({
      format: 'pt',
      cohort_commit: hex(script.commits[2]!),
      cohort_height: '2',
      cohort_round: '2',
      cohort_federation: FED,
      cohort_model: '2nn',
      cohort_input: '[784]',
      cohort_layers: JSON.stringify([
        { type: 'dense', units: 200 },
        { type: 'relu' },
        { type: 'dense', units: 200 },
        { type: 'relu' },
        { type: 'dense', units: 10 },
      ]),
    });
    // The rollback commit @3 exports @1's model.
    const three = join(dir, 'model-3.safetensors');
    await ok('versions', 'export', 'HEAD~1', '--out', three, ...asSite());
    expect(parametersFromTensors(MNIST_2NN, decodeSafetensors(readFileSync(three)).tensors)).toEqual(
      script.models[1],
    );

    writeFileSync(out, 'keep me');
    const again = await cohort('versions', 'export', '@2', '--out', out, ...asSite());
    expect(again.status).toBe(2);
    expect(again.stderr).toContain('error [OUTPUT_EXISTS]');
    expect(readFileSync(out, 'utf8')).toBe('keep me');
    await ok('versions', 'export', '@2', '--out', out, '--force', ...asSite());
    expect(decodeSafetensors(readFileSync(out)).metadata['cohort_commit']).toBe(hex(script.commits[2]!));
  });

  it('export: a store without the model is refused naming the commit (pruned or shallow)', async () => {
    const out = join(dir, 'model-1.safetensors');
    const r = await cohort('versions', 'export', '@1', '--out', out, ...config(), '--member', 'site-2');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(
      `error [MODEL_MISSING]: the model store ${join(dep.config.paths.dataDir, 'site-2')}`,
    );
    expect(r.stderr).toContain(hex(script.commits[1]!));
    expect(r.stderr).toContain('pruned');
    expect(r.stderr).toContain('shallow');
    expect(r.stderr).toContain("another site's store, or a newer commit");
    // The coordinator keeps no store: it needs --store.
    const coord = await cohort(
      'versions',
      'export',
      '@1',
      '--out',
      out,
      ...config(),
      '--member',
      'coordinator',
    );
    expect(coord.status).toBe(2);
    expect(coord.stderr).toContain('--store <dir> is needed');
  });
});

describe('cohort versions rollback', () => {
  let coordinator: MemberContext;
  /** What the fake coordinator does with the next request: the records it appends. */
  const plans: ((target: Uint8Array) => LogRecordInput[])[] = [];
  const requests: { signer: string; body: ReturnType<typeof openControl<'rollback-request'>>['body'] }[] = [];

  beforeAll(async () => {
    coordinator = await openMember(dep.config, 'coordinator');
    coordinator.transport.subscribe(coordinator.subjects.rollbackRequest, async (msg) => {
      const opened = openControl(msg.data, 'rollback-request', coordinator.keys);
      requests.push({ signer: opened.signer, body: opened.body });
      const height = script.commits.findIndex((c) => bytesToHex(c.hash) === bytesToHex(opened.body.target));
      await append(plans.shift()!(opened.body.target));
      return new TextEncoder().encode(
        JSON.stringify({ queued: true, target: bytesToHex(opened.body.target), height }),
      );
    });
    await coordinator.transport.flush();
  });

  afterAll(async () => {
    await coordinator?.close();
  });

  it('sends a signed request, prints the reply, and --wait prints the COMMIT', async () => {
    const target = script.commits[2]!;
    plans.push(() => script.rollbackRound(6, target).records);
    const r = await cohort(
      'versions',
      'rollback',
      '@2',
      '--reason',
      'bad data in round 5',
      '--wait',
      ...config(),
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const [reply, outcome] = r.stdout.trimEnd().split('\n');
    expect(JSON.parse(reply!)).toEqual({ queued: true, target: hex(target), height: 2 });
    expect(outcome).toBe(`COMMIT ${hex(script.commits[5]!)} height 5 (round 6)`);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.signer).toBe('coordinator');
    expect(requests[0]!.body).toMatchObject({ federation: FED, reason: 'bad data in round 5' });
    expect(bytesToHex(requests[0]!.body.target)).toBe(hex(target));
    expect(Number.isSafeInteger(requests[0]!.body.requestedUnixMs)).toBe(true);
    // The log now shows it.
    const log = JSON.parse(await ok('versions', 'log', '--json', '--limit', '1', ...asSite()));
    expect(log[0]).toMatchObject({
      kind: 'rollback',
      height: 5,
      rollbackTarget: hex(target),
      rollbackTargetHeight: 2,
    });
  });

  it('exits 3 when the rollback round ABORTs', async () => {
    const target = script.commits[1]!;
    plans.push(() => script.abortRound(7, 'site-2 voted NO', target));
    const r = await cohort(
      'versions',
      'rollback',
      hex(target).slice(0, 10),
      ...config(),
      '--member',
      'coordinator',
      '--wait',
    );
    expect(r.status).toBe(3);
    const [reply, outcome] = r.stdout.trimEnd().split('\n');
    expect(JSON.parse(reply!)).toMatchObject({ queued: true, target: hex(target), height: 1 });
    expect(outcome).toBe('ABORT round 7: site-2 voted NO');
  });

  it('refuses the head, and a member other than the coordinator, before sending (exit 2)', async () => {
    const head = await cohort('versions', 'rollback', 'HEAD', ...config());
    expect(head.status).toBe(2);
    expect(head.stderr).toContain('is the head');
    const site = await cohort('versions', 'rollback', '@1', ...asSite());
    expect(site.status).toBe(2);
    expect(site.stderr).toContain("signed with the coordinator's key");
    expect(requests).toHaveLength(2);
  });
});

describe('cohort versions on a tampered log', () => {
  it('reports an entry signed by another key as a finding (exit 3) with its code', async () => {
    const position = writer.position();
    const forged: LogRecordBody = {
      federation: FED,
      sequence: position.sequence + 1,
      previousEntry: position.hash,
      unixMs: Date.now(),
      snapshot: {
        commitHash: script.head.hash,
        height: script.head.height,
        object: 'forged',
        digest: new Uint8Array(32),
        bytes: 1,
        site: 'site-1',
      },
    };
    const siteKey = loadSigningKeyPair(join(dir, 'keys', 'site-1', 'site-1.key'));
    await jetstream(nc).publish(`cohort.${FED}.log`, sealControl('log-record', forged, 'site-1', siteKey), {
      expect: { lastSequence: position.sequence },
    });
    for (const command of [['log'], ['show', '@1'], ['diff', '@0', '@1']]) {
      const r = await cohort('versions', ...command, ...asSite());
      expect(r.status, command.join(' ')).toBe(3);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(
        new RegExp(
          // The signer is compared with the coordinator before any signature is checked.
          `^error \\[LOG_ENTRY_INVALID\\]: log COHORT_VFED entry ${position.sequence + 1}: not a signed log record: log-record signed by "site-1", only "coordinator" may send it here`,
        ),
      );
    }
  });
});
