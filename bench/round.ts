import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CkksKeyset, DEFAULT_CKKS_PARAMS, getCkksContext } from '../crypto/ckks/index.ts';
import { generateSigningKeyPair, type SigningKeyPair } from '../crypto/signature/index.ts';
import { counterRandom } from '../federation/index.ts';
import { createCpuEngine } from '../gpu/cpu/cpu-engine.ts';
import type { TrainingEngine } from '../gpu/index.ts';
import {
  AggregateBuilder,
  type Assignment,
  assembleUpdate,
  BlockVerifier,
  codecEncoding,
  type EncodedUpdate,
  encodeAggregate,
  encodeUpdate,
  FRAME_KIND,
  type RoundContext,
  type VerifiedBlock,
} from '../src/protocol/index.ts';
import { startAgent } from '../src/services/agent/agent-service.ts';
import { federationGenesis } from '../src/services/agent/genesis.ts';
import { loadSiteShard } from '../src/services/agent/site-data.ts';
import { startAggregator } from '../src/services/aggregator/aggregator-service.ts';
import { type CoordinatorEvent, startCoordinator } from '../src/services/coordinator/index.ts';
import { encodeAggregateObject } from '../src/services/coordinator/round-params.ts';
import {
  createLocalDeployment,
  type LocalDeployment,
  type MemberContext,
  openMember,
} from '../src/services/index.ts';
import {
  connectTransport,
  federationSubjects,
  type NatsTransport,
  startNatsServer,
  type TransportSubscription,
} from '../src/transport/index.ts';
import { type BenchRow, printTable, writeResults } from './table.ts';

const env = (name: string, fallback: number) => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
};
/** Rounds of the he and plaintext runs (round 1 is reported apart as warm-up). */
const ROUNDS = env('COHORT_BENCH_ROUNDS', 4);
const SITES = 4;
const AGGREGATORS = env('COHORT_BENCH_AGGREGATORS', 2);
/**
 * Training rows shared by the 4 sites: the demo's workload (all of MNIST, 15,000 rows per site) by
 * default, so the ratio compares rounds as a federation runs them. With a tiny value (e.g. 400) the
 * round is almost all protocol and the ratio shows the crypto and 2PC cost alone.
 */
const TRAIN_LIMIT = env('COHORT_BENCH_TRAIN_LIMIT', 60_000);
const AGENT_COUNTS = (process.env.COHORT_BENCH_AGENTS ?? '4,64,256')
  .split(',')
  .map(Number)
  .filter((n) => Number.isInteger(n) && n > 0);
const SCALE_ROUNDS = env('COHORT_BENCH_SCALE_ROUNDS', 5);
const SCALE_AGGREGATORS = env('COHORT_BENCH_SCALE_AGGREGATORS', 4);
const SCALE_PARAMS = 7_850; // logistic regression 784×10 + 10
const SCALE_MAX_CONTRIBUTORS = Math.max(256, ...AGENT_COUNTS);
/** Falcon key pairs generated for the lightweight agents (shared round-robin beyond this). */
const SCALE_KEYS = 16;

const mean = (xs: readonly number[]) =>
  xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length;
function percentile(values: readonly number[], q: number): number {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}
const steady = (xs: readonly number[]) => (xs.length > 1 ? xs.slice(1) : xs);
const say = (s: string) => process.stderr.write(`[round bench] ${s}\n`);

/** Resolves when `cond()` holds, polling every 2 ms; rejects after `timeoutMs`. */
async function until(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

// ---------------------------------------------------------------------------------------------
// 1 + 2. he round with the real services

interface HeResult {
  durations: number[];
  /** Per COMMIT: decision publication → the last site's switchedUnixMs. */
  lastSwitchMs: number[];
  switchP50: number | undefined;
  switchP99: number | undefined;
  switchCount: number;
  committed: number;
  aborted: number;
  assignments: readonly Assignment[];
  uploadBytes: number[];
  /** Per round: RoundOpen → PREPARE published (train, encrypt, upload, verify, sum). */
  openToPrepareMs: number[];
  /** Per round: PREPARE → decision (decrypt, apply, durable candidate, votes, log append). */
  prepareToDecisionMs: number[];
}

async function runHe(dep: LocalDeployment): Promise<HeResult> {
  const contexts: MemberContext[] = [];
  const open = async (id: string) => {
    const c = await openMember(dep.config, id);
    contexts.push(c);
    return c;
  };
  const aggs = await Promise.all(dep.aggregators.map(async (a) => startAggregator(await open(a))));
  const agents = [];
  for (const s of dep.sites) agents.push(await startAgent(await open(s)));
  const coordCtx = await open(dep.coordinator);
  let assignments: readonly Assignment[] = [];
  const lastSwitch = new Map<number, number>();
  const marks = new Map<number, { open: number; prepare: number; decision: number }>();
  const onEvent = (e: CoordinatorEvent) => {
    const now = performance.now();
    if (e.type === 'round-open') {
      assignments = e.assignments;
      marks.set(e.round, { open: now, prepare: now, decision: now });
    }
    if (e.type === 'prepare') marks.get(e.round)!.prepare = now;
    if (e.type === 'decision') marks.get(e.summary.round)!.decision = now;
    if (e.type === 'switched') lastSwitch.set(e.round, Math.max(lastSwitch.get(e.round) ?? 0, e.latencyMs));
    if (e.type === 'decision')
      say(
        `he round ${e.summary.round}: ${e.summary.commit ? 'COMMIT' : `ABORT (${e.summary.reason})`} in ${e.summary.durationMs} ms`,
      );
  };
  try {
    const coordinator = startCoordinator(coordCtx, { rounds: ROUNDS, onEvent, switchWaitMs: 10_000 });
    const summary = await coordinator.done;
    return {
      durations: summary.rounds.map((r) => r.durationMs),
      lastSwitchMs: [...lastSwitch.values()],
      switchP50: summary.switchLatency.p50Ms,
      switchP99: summary.switchLatency.p99Ms,
      switchCount: summary.switchLatency.count,
      committed: summary.committed,
      aborted: summary.aborted,
      assignments,
      uploadBytes: summary.rounds.map((r) => r.uploadBytes),
      openToPrepareMs: [...marks.values()].map((m) => m.prepare - m.open),
      prepareToDecisionMs: [...marks.values()].map((m) => m.decision - m.prepare),
    };
  } finally {
    for (const a of agents) await a.stop();
    for (const a of aggs) await a.stop();
    for (const c of contexts) await c.close();
  }
}

// ---------------------------------------------------------------------------------------------
// 1. plaintext FedAvg over the same server, users, subjects and transport

const HEADER = 16; // [round u32][pad u32][weight f64]

function packFloats(round: number, weight: number, values: Float32Array): Uint8Array {
  const out = new Uint8Array(HEADER + values.byteLength);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, round, true);
  dv.setFloat64(8, weight, true);
  out.set(new Uint8Array(values.buffer, values.byteOffset, values.byteLength), HEADER);
  return out;
}

function unpackFloats(data: Uint8Array): { round: number; weight: number; values: Float32Array } {
  const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const copy = data.slice(HEADER); // aligned copy
  return {
    round: dv.getUint32(0, true),
    weight: dv.getFloat64(8, true),
    values: new Float32Array(copy.buffer, 0, copy.byteLength / 4),
  };
}

async function runPlain(dep: LocalDeployment, assignments: readonly Assignment[]): Promise<number[]> {
  const cfg = dep.config;
  const learning = cfg.learning;
  const genesis = federationGenesis(cfg);
  const nParams = genesis.parameters.length;
  const contexts: MemberContext[] = [];
  const subs: TransportSubscription[] = [];
  const engines: TrainingEngine[] = [];
  const open = async (id: string) => {
    const c = await openMember(cfg, id);
    contexts.push(c);
    return c;
  };
  const aggOf = new Map(assignments.map((a) => [a.site, a.aggregator]));
  const aggIds = [...new Set(assignments.map((a) => a.aggregator))];
  try {
    const coord = await open(dep.coordinator);
    const S = coord.subjects;

    // Aggregators: sum the float32 updates of their sites, forward the sum when all are in.
    for (const id of aggIds) {
      const ctx = await open(id);
      const mine = assignments.filter((a) => a.aggregator === id).length;
      let round = 0;
      let count = 0;
      let weight = 0;
      let sum = new Float32Array(nParams);
      subs.push(
        ctx.transport.subscribe(S.updatesFor(id), async (msg) => {
          const u = unpackFloats(msg.data);
          if (u.round !== round) {
            round = u.round;
            count = 0;
            weight = 0;
            sum = new Float32Array(nParams);
          }
          for (let i = 0; i < nParams; i++) sum[i]! += u.values[i]!;
          weight += u.weight;
          count++;
          if (count === mine) {
            const out = packFloats(round, weight, sum);
            void ctx.transport.request(S.partial(id), out).catch((err) => say(`plain partial: ${err}`));
          }
          return Uint8Array.of(1);
        }),
      );
    }

    // Sites: train from the current model, send (w_local − w)·n_k, apply the published model, ack.
    const sites: { ctx: MemberContext; w: Float32Array; index: number }[] = [];
    for (const id of dep.sites) {
      const ctx = await open(id);
      const shard = loadSiteShard(cfg, id);
      const engine = createCpuEngine();
      engines.push(engine);
      const site = { ctx, w: genesis.parameters.slice() as Float32Array, index: shard.index };
      sites.push(site);
      subs.push(
        ctx.transport.subscribe(S.roundOpen, async (msg) => {
          const round = new DataView(msg.data.buffer, msg.data.byteOffset).getUint32(0, true);
          const trained = await engine.train(genesis.spec, site.w, shard.data, {
            learningRate: learning.learningRate,
            momentum: 0,
            batchSize: learning.batchSize,
            epochs: learning.epochs,
            proximalMu: 0,
            shuffleSeed: counterRandom(learning.initSeed >>> 0, round >>> 0, site.index),
          });
          const u = new Float32Array(nParams);
          for (let i = 0; i < nParams; i++) u[i] = (trained.parameters[i]! - site.w[i]!) * shard.data.count;
          await ctx.transport.request(S.update(aggOf.get(id)!, id), packFloats(round, shard.data.count, u));
        }),
        ctx.transport.subscribe(S.prepare, async (msg) => {
          const m = unpackFloats(msg.data);
          site.w = m.values;
          await ctx.transport.request(S.vote(id), packFloats(m.round, 0, new Float32Array(0)));
        }),
      );
    }

    // Coordinator: sum partials, average, publish the model, count acks.
    let w = genesis.parameters.slice();
    let round = 0;
    let partials = 0;
    let weight = 0;
    let acks = 0;
    let sum = new Float32Array(nParams);
    subs.push(
      coord.transport.subscribe(`${S.partial('_').slice(0, -1)}*`, async (msg) => {
        const p = unpackFloats(msg.data);
        if (p.round !== round) return Uint8Array.of(0);
        for (let i = 0; i < nParams; i++) sum[i]! += p.values[i]!;
        weight += p.weight;
        if (++partials === aggIds.length) {
          const next = new Float32Array(nParams);
          for (let i = 0; i < nParams; i++) next[i] = w[i]! + sum[i]! / weight;
          w = next;
          void coord.transport.publish(S.prepare, packFloats(round, weight, w));
        }
        return Uint8Array.of(1);
      }),
      coord.transport.subscribe(`${S.vote('_').slice(0, -1)}*`, async (msg) => {
        if (unpackFloats(msg.data).round === round) acks++;
        return Uint8Array.of(1);
      }),
    );
    await Promise.all(subs.map((s) => s.ready()));
    for (const c of contexts) await c.transport.flush();

    const durations: number[] = [];
    for (let r = 1; r <= ROUNDS; r++) {
      round = r;
      partials = 0;
      weight = 0;
      acks = 0;
      sum = new Float32Array(nParams);
      const t0 = performance.now();
      const openMsg = new Uint8Array(8);
      new DataView(openMsg.buffer).setUint32(0, r, true);
      await coord.transport.publish(S.roundOpen, openMsg);
      await until(() => acks === dep.sites.length, 120_000, `plaintext round ${r} acks`);
      durations.push(performance.now() - t0);
      say(`plaintext round ${r}: ${durations.at(-1)!.toFixed(0)} ms`);
    }
    return durations;
  } finally {
    await Promise.allSettled(subs.map((s) => s.unsubscribe()));
    for (const e of engines) await e.dispose();
    for (const c of contexts) await c.close();
  }
}

// ---------------------------------------------------------------------------------------------
// 3. scaling: lightweight agents through the verified aggregation path

interface ScaleResult {
  agents: number;
  aggregators: number;
  roundMs: number[];
  uploadMs: number[];
  prepareToVotesMs: number[];
  setupMs: number;
}

async function runScale(
  url: string,
  agentsN: number,
  keysetPool: { keyset: CkksKeyset; keys: SigningKeyPair[] },
): Promise<ScaleResult> {
  const t0 = performance.now();
  const F = `scale${agentsN}`;
  const S = federationSubjects(F);
  const ckks = await getCkksContext(DEFAULT_CKKS_PARAMS);
  const options = {
    bits: 8 as const,
    clip: 0.05,
    maxContributors: SCALE_MAX_CONTRIBUTORS,
    crcChunkBytes: 16_384,
  };
  const encoding = codecEncoding(ckks, options);
  const siteIds = Array.from({ length: agentsN }, (_, i) => `s${i}`);
  const aggIds = Array.from({ length: Math.min(SCALE_AGGREGATORS, agentsN) }, (_, i) => `a${i}`);
  const keyOf = (signer: string): SigningKeyPair => {
    if (signer.startsWith('a'))
      return keysetPool.keys[(Number(signer.slice(1)) + 1) % keysetPool.keys.length]!;
    return keysetPool.keys[Number(signer.slice(1)) % keysetPool.keys.length]!;
  };
  const aggOf = (site: string) => aggIds[Number(site.slice(1)) % aggIds.length]!;
  const contextOf = (round: number): RoundContext => ({
    federation: F,
    round,
    version: round - 1,
    baseCommit: new Uint8Array(32).fill(round),
  });

  // Pre-encode every agent's update for every round (not timed: stands in for training + encrypt).
  const encoded = new Map<string, EncodedUpdate>();
  for (let r = 1; r <= SCALE_ROUNDS; r++) {
    for (const [i, site] of siteIds.entries()) {
      const update = new Float32Array(SCALE_PARAMS);
      for (let j = 0; j < update.length; j++) update[j] = Math.sin(i * 7 + j + r) * 0.01;
      encoded.set(
        `${r}/${site}`,
        encodeUpdate({
          update,
          residual: null,
          credentials: { signer: site, ckks: keysetPool.keyset, signing: keyOf(site) },
          context: contextOf(r),
          options,
          exampleWeight: 100,
          roundingSeed: { key0: i, key1: r },
        }),
      );
    }
  }
  const encodeMs = performance.now() - t0;
  say(`scale ${agentsN}: pre-encoded ${encoded.size} updates in ${(encodeMs / 1000).toFixed(1)} s`);

  const transports: NatsTransport[] = [];
  const subs: TransportSubscription[] = [];
  const connect = async (name: string) => {
    const t = await connectTransport({ servers: [url], name, timeoutMs: 30_000 });
    transports.push(t);
    return t;
  };
  const allowed = ['falcon-512' as const];
  let round = 0;
  let uploadDone = 0;
  let prepareAt = 0;
  let votes = 0;
  let partialsIn = 0;
  let coordBuilder: AggregateBuilder | undefined;
  const aggState = new Map<
    string,
    {
      verifier: BlockVerifier;
      builder: AggregateBuilder;
      blocks: Map<string, VerifiedBlock[]>;
      count: number;
    }
  >();
  try {
    // Aggregators: verify each block and manifest, add complete updates, sign and forward the partial.
    for (const id of aggIds) {
      const t = await connect(id);
      const mine = siteIds.filter((s) => aggOf(s) === id).length;
      subs.push(
        t.subscribe(S.updatesFor(id), async (msg) => {
          const st = aggState.get(id)!;
          if (msg.data[5] === FRAME_KIND.block) {
            const b = st.verifier.verifyBlock(msg.data);
            const list = st.blocks.get(b.signer) ?? [];
            list.push(b);
            st.blocks.set(b.signer, list);
            return Uint8Array.of(1);
          }
          const m = st.verifier.verifyManifest(msg.data);
          st.builder.add(assembleUpdate(m, st.blocks.get(m.signer) ?? []));
          st.blocks.delete(m.signer);
          if (++st.count === mine) {
            const partial = st.builder.finish();
            const signed = encodeAggregate(
              partial,
              { signer: id, signing: keyOf(id) },
              contextOf(round),
              options,
            );
            void (async () => {
              for (const b of signed.blocks) await t.request(S.partial(id), b);
              await t.request(S.partial(id), signed.manifest);
            })().catch((err) => say(`partial of ${id}: ${err}`));
          }
          return Uint8Array.of(1);
        }),
      );
    }

    // Coordinator: verify partials, add, publish PREPARE with the summed ciphertexts, count votes.
    const coord = await connect('coordinator');
    const coordVerifiers = new Map<string, BlockVerifier>();
    const coordBlocks = new Map<string, VerifiedBlock[]>();
    subs.push(
      coord.subscribe(`${S.partial('_').slice(0, -1)}*`, async (msg) => {
        const agg = msg.subject.slice(msg.subject.lastIndexOf('.') + 1);
        const v = coordVerifiers.get(agg)!;
        if (msg.data[5] === FRAME_KIND.block) {
          const b = v.verifyBlock(msg.data);
          coordBlocks.set(agg, [...(coordBlocks.get(agg) ?? []), b]);
          return Uint8Array.of(1);
        }
        const m = v.verifyManifest(msg.data);
        coordBuilder!.add(assembleUpdate(m, coordBlocks.get(agg) ?? []));
        if (++partialsIn === aggIds.length) {
          const aggregate = coordBuilder!.finish();
          const object = encodeAggregateObject(aggregate.ciphertexts);
          const body = new Uint8Array(4 + object.length);
          new DataView(body.buffer).setUint32(0, round, true);
          body.set(object, 4);
          prepareAt = performance.now();
          void coord.publish(S.prepare, body);
        }
        return Uint8Array.of(1);
      }),
      coord.subscribe(`${S.vote('_').slice(0, -1)}*`, async (msg) => {
        if (new DataView(msg.data.buffer, msg.data.byteOffset).getUint32(0, true) === round) votes++;
        return Uint8Array.of(1);
      }),
    );

    // Lightweight agents: one connection each; send the pre-encoded update on RoundOpen, vote on PREPARE.
    for (const site of siteIds) {
      const t = await connect(site);
      subs.push(
        t.subscribe(S.roundOpen, async (msg) => {
          const r = new DataView(msg.data.buffer, msg.data.byteOffset).getUint32(0, true);
          const enc = encoded.get(`${r}/${site}`)!;
          const subject = S.update(aggOf(site), site);
          for (const b of enc.blocks) await t.request(subject, b);
          await t.request(subject, enc.manifest);
          uploadDone++;
        }),
        t.subscribe(S.prepare, async (msg) => {
          const vote = msg.data.slice(0, 4); // round; no decryption (see report)
          await t.request(S.vote(site), vote);
        }),
      );
    }
    await Promise.all(subs.map((s) => s.ready()));
    for (const t of transports) await t.flush();
    const setupMs = performance.now() - t0;

    const roundMs: number[] = [];
    const uploadMs: number[] = [];
    const prepareToVotesMs: number[] = [];
    for (let r = 1; r <= SCALE_ROUNDS; r++) {
      round = r;
      uploadDone = 0;
      votes = 0;
      partialsIn = 0;
      coordBuilder = new AggregateBuilder(ckks);
      coordBlocks.clear();
      const context = contextOf(r);
      for (const id of aggIds) {
        aggState.get(id)?.builder.dispose();
        aggState.set(id, {
          verifier: new BlockVerifier({
            context,
            ckksParamsId: ckks.paramsId,
            encoding,
            keys: (s) => (s.startsWith('s') ? keyOf(s) : undefined),
            allowedAlgorithms: allowed,
          }),
          builder: new AggregateBuilder(ckks),
          blocks: new Map(),
          count: 0,
        });
        coordVerifiers.set(
          id,
          new BlockVerifier({
            context,
            ckksParamsId: ckks.paramsId,
            encoding,
            keys: (s) => (s === id ? keyOf(id) : undefined),
            allowedAlgorithms: allowed,
          }),
        );
      }
      const start = performance.now();
      const msg = new Uint8Array(4);
      new DataView(msg.buffer).setUint32(0, r, true);
      await coord.publish(S.roundOpen, msg);
      await until(() => uploadDone === agentsN, 300_000, `scale ${agentsN} uploads`);
      const uploaded = performance.now();
      await until(() => votes === agentsN, 300_000, `scale ${agentsN} votes`);
      const end = performance.now();
      roundMs.push(end - start);
      uploadMs.push(uploaded - start);
      prepareToVotesMs.push(end - prepareAt);
      say(`scale ${agentsN} round ${r}: ${(end - start).toFixed(0)} ms`);
    }
    return { agents: agentsN, aggregators: aggIds.length, roundMs, uploadMs, prepareToVotesMs, setupMs };
  } finally {
    await Promise.allSettled(subs.map((s) => s.unsubscribe()));
    for (const st of aggState.values()) st.builder.dispose();
    coordBuilder?.dispose();
    for (const t of transports) await t.close();
  }
}

// ---------------------------------------------------------------------------------------------

/**
 * Round benchmark, one run: (1) he round time with the real services vs a plaintext FedAvg round
 * over the same NATS server, users, subjects and transport, both with the same local training;
 * (2) COMMIT → switched latency from the coordinator summary; (3) round time of the verified
 * aggregation path with 4 → 64 → 256 lightweight agents.
 */
export async function runRoundBench(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const extra: Record<string, unknown> = {};
  const dir = mkdtempSync(join(tmpdir(), 'cohort-round-bench-'));
  let dep: LocalDeployment | undefined;
  const tStart = performance.now();
  try {
    dep = await createLocalDeployment({
      dir,
      federation: 'bench',
      aggregators: AGGREGATORS,
      sites: SITES,
      // The demo's federation (schema defaults: 2NN on MNIST, E = 1, B = 10, lr 0.1, FedAvg, CPU, 8-bit).
      overrides: {
        round: {
          count: ROUNDS,
          deadlineMs: 120_000,
          voteTimeoutMs: 120_000,
          heartbeatMs: 200,
          missedHeartbeats: 50,
        },
        learning: { trainLimit: TRAIN_LIMIT, testLimit: 200 },
        codec: { clip: 0.02 },
        log: { level: 'error' },
      },
    });
    say(`deployment up (${((performance.now() - tStart) / 1000).toFixed(1)} s); he rounds…`);
    const he = await runHe(dep);
    say('plaintext rounds…');
    const plain = await runPlain(dep, he.assignments);
    const nParams = federationGenesis(dep.config).parameters.length;

    const heMean = mean(steady(he.durations));
    const plainMean = mean(steady(plain));
    const ratio = heMean / plainMean;
    const sec = 'he vs plain';
    rows.push(
      { section: sec, metric: `model params (2NN)`, value: nParams, unit: 'params', compare: '199,210' },
      {
        section: sec,
        metric: `he round, mean r2..r${ROUNDS} (${SITES} sites, ${AGGREGATORS} aggs)`,
        value: heMean,
        unit: 'ms',
        compare: `r1 ${he.durations[0]?.toFixed(0)} ms; ${he.committed} commit / ${he.aborted} abort`,
      },
      {
        section: sec,
        metric: `plaintext FedAvg round, mean r2..r${ROUNDS}`,
        value: plainMean,
        unit: 'ms',
        compare: `r1 ${plain[0]?.toFixed(0)} ms`,
      },
      {
        section: sec,
        metric: '  he: open → PREPARE (train, encrypt, upload, verify, sum)',
        value: mean(steady(he.openToPrepareMs)),
        unit: 'ms',
        compare: '',
      },
      {
        section: sec,
        metric: '  he: PREPARE → decision (decrypt, apply, store, vote, log)',
        value: mean(steady(he.prepareToDecisionMs)),
        unit: 'ms',
        compare: '',
      },
      {
        section: sec,
        metric: 'ratio he / plaintext',
        value: ratio,
        unit: '×',
        compare: '≤ 1.3',
        pass: ratio <= 1.3,
      },
      {
        section: sec,
        metric: 'he upload per round (all sites)',
        value: mean(he.uploadBytes) / 1e6,
        unit: 'MB',
        compare: `plaintext ${((SITES * (nParams * 4 + HEADER)) / 1e6).toFixed(2)} MB`,
      },
    );
    const sync = 'param sync';
    rows.push(
      {
        section: sync,
        metric: `COMMIT → site switched, P50 (${he.switchCount} switches)`,
        value: he.switchP50 ?? Number.NaN,
        unit: 'ms',
        compare: '',
      },
      {
        section: sync,
        metric: 'COMMIT → site switched, P99',
        value: he.switchP99 ?? Number.NaN,
        unit: 'ms',
        compare: '< 200',
        pass: he.switchP99 !== undefined && he.switchP99 < 200,
      },
      {
        section: sync,
        metric: `COMMIT → last site switched, P50 over ${he.lastSwitchMs.length} rounds`,
        value: percentile(he.lastSwitchMs, 0.5),
        unit: 'ms',
        compare: '',
      },
      {
        section: sync,
        metric: `COMMIT → last site switched, max over ${he.lastSwitchMs.length} rounds`,
        value: percentile(he.lastSwitchMs, 1),
        unit: 'ms',
        compare: '< 200',
        pass: percentile(he.lastSwitchMs, 1) < 200,
      },
    );
    extra.he = he;
    extra.plain = { durations: plain };
    await dep.stop();
    dep = undefined;

    // 3. scaling
    const nats = await startNatsServer({ jetstream: false });
    const scales: ScaleResult[] = [];
    try {
      const ckks = await getCkksContext(DEFAULT_CKKS_PARAMS);
      const keyset = CkksKeyset.create(ckks);
      const keys = Array.from({ length: SCALE_KEYS }, () => generateSigningKeyPair('falcon-512'));
      try {
        for (const n of AGENT_COUNTS) scales.push(await runScale(nats.url, n, { keyset, keys }));
      } finally {
        keyset.delete();
      }
    } finally {
      await nats.stop();
    }
    const base = scales[0];
    for (const s of scales) {
      const ms = mean(steady(s.roundMs));
      const growth = base ? ms / mean(steady(base.roundMs)) : Number.NaN;
      rows.push({
        section: 'scaling',
        metric: `${s.agents} agents / ${s.aggregators} aggs: round, mean r2..r${SCALE_ROUNDS}`,
        value: ms,
        unit: 'ms',
        compare: `×${growth.toFixed(2)} vs ${base?.agents} agents (agents ×${(s.agents / (base?.agents ?? 1)).toFixed(0)})`,
      });
      rows.push({
        section: 'scaling',
        metric: `${s.agents} agents: open → all uploads acked`,
        value: mean(steady(s.uploadMs)),
        unit: 'ms',
        compare: '',
      });
      rows.push({
        section: 'scaling',
        metric: `${s.agents} agents: PREPARE → all votes in`,
        value: mean(steady(s.prepareToVotesMs)),
        unit: 'ms',
        compare: '',
      });
    }
    extra.scaling = { params: SCALE_PARAMS, maxContributors: SCALE_MAX_CONTRIBUTORS, runs: scales };
  } finally {
    await dep?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  printTable(
    `Round benchmark (he: ${SITES} sites / ${AGGREGATORS} aggregators, 2NN, trainLimit ${TRAIN_LIMIT}, ${ROUNDS} rounds; scaling: ${SCALE_PARAMS} params, ${SCALE_ROUNDS} rounds; total ${((performance.now() - tStart) / 1000).toFixed(0)} s)`,
    rows,
  );
  const path = writeResults('round', rows, {
    config: { ROUNDS, SITES, AGGREGATORS, TRAIN_LIMIT, AGENT_COUNTS, SCALE_ROUNDS, SCALE_AGGREGATORS },
    ...extra,
  });
  console.log(`\nwrote ${path}`);
  return rows;
}
