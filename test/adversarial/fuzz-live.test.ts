// A structure-aware fuzzer against a live federation (issue 22, acceptance 2). Three members are
// hostile with their own credentials: site-5 and the aggregators agg-2 and agg-3. Their services
// run and send what they would — site-5 trains, votes, switches and writes snapshots; agg-3 sends
// its partial to the coordinator and agg-2 its partial to its parent agg-1 in a two-level tree —
// and every message they send is tapped as a template: a heartbeat, an update's blocks and
// manifest, a vote, a `switched`, a snapshot offer, a partial's and a sub-partial's blocks and
// manifest. A seeded fast-check run draws a kind and a mutation (fuzz-mutations.ts): the
// template is decoded by its structure (wire frame, envelope, protobuf body, snapshot header), one
// field, framing header, NATS header, reply subject or subject is changed, and the old signature
// is kept or the bad body is signed with the member's own key; the mutant goes out on the
// member's own NATS user, before the original (held back a moment) or after it.
//
// Each run asserts: where the receiver's answer depends only on the mutant (its transport's chunk
// checks, the envelope and signature, the frame header, the snapshot header), the receiver gave
// exactly the answer the same checks give here (fuzz-oracle.ts); and whatever the state, the
// mutant was refused with a stable code that its receiver counted (its counters are read right
// before and right after), dropped by its transport and counted, refused by nats-server, or
// accepted. Between batches, and after the run, a round opened afterwards must commit. After the
// run every accepted mutant must have been harmless: the log verifies (LogHistory) and is one
// chain; `cohort audit verify` finds no problem and re-adds every committed aggregate from the
// stored contributions, so every committed model is the FedAvg of the contributions the log lists,
// the model every YES voter hashed; every honest site holds the logged head; no honest site or
// aggregator is ever struck or blamed; no service crashed and the heap stayed bounded.
// docs/security.md's summary (`attacks:fuzz`) is rendered from what was observed
// (COHORT_WRITE_ATTACKS=1 rewrites it). COHORT_FUZZ_DUMP=<file> writes every mutant and its outcome
// there, one line each; COHORT_FUZZ_SEED and COHORT_FUZZ_RUNS try other runs (the summary then
// differs).
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { bytesEqual } from '../../crypto/digest/index.ts';
import { type CohortConfigInput, parseConfig } from '../../src/config/index.ts';
import { type AgentService, federationGenesis, startAgent } from '../../src/services/agent/index.ts';
import { type AggregatorService, startAggregator } from '../../src/services/aggregator/index.ts';
import {
  type CoordinatorHandle,
  type RoundSummary,
  startCoordinator,
} from '../../src/services/coordinator/index.ts';
import { loadSiteDataKey, type MemberContext, openMember } from '../../src/services/index.ts';
import { crcHex } from '../../src/transport/index.ts';
import { maxSnapshotBytes } from '../../src/versions/snapshot.ts';
import { strategyStateHash } from '../../src/versions/strategy-state-hash.ts';
import { expectSingleChain, Federation, hex, waitFor } from '../helpers/federation.ts';
import { auditLive } from '../helpers/run-cli.ts';
import { AttackLedger, type Fact, holds } from './attack-ledger.ts';
import { forgeSnapshot } from './forged-snapshot.ts';
import { messageId, type SendResult, sendMutant, TemplateTap } from './fuzz-harness.ts';
import {
  FUZZ_KINDS,
  type FuzzKind,
  type FuzzPlan,
  fuzzPlan,
  type Mutant,
  type MutationClass,
  type MutationContext,
  mutate,
  type Template,
} from './fuzz-mutations.ts';
import {
  intakeCap,
  type OracleContext,
  sentHeaders,
  statelessVerdict,
  transportVerdict,
} from './fuzz-oracle.ts';

const F = 'fuzz';
/** The fast-check seed: fixed, so that every run draws the same kinds and mutations. */
const SEED = Number(process.env['COHORT_FUZZ_SEED'] ?? 222);
/** Mutants sent, in batches of {@link BATCH}: fixed, sized to keep the file near two minutes. */
const RUNS = Number(process.env['COHORT_FUZZ_RUNS'] ?? 240);
const BATCH = 60;
/** Time the run may spend in all waiting for a fresh message to precede (a mutant `before` it). */
const WAIT_BUDGET_MS = 20_000;
/** Kinds sent once a round: a mutant meant to precede one may wait for the next. */
const WAITS_FOR: ReadonlySet<FuzzKind> = new Set([
  'update-block',
  'update-manifest',
  'vote',
  'switched',
  'partial-block',
  'partial-manifest',
  'subpartial-block',
  'subpartial-manifest',
]);
const HOSTILE_SITE = 'site-5';
const HOSTILE_AGGREGATORS = ['agg-2', 'agg-3'] as const;
const HONEST_SITES = ['site-1', 'site-2', 'site-3', 'site-4'];
const HONEST_AGGREGATOR = 'agg-1';
/** Bound on the test process's heap growth over the run (every member runs in it). */
const HEAP_BOUND = 256 * 1024 * 1024;

const OVERRIDES: Partial<CohortConfigInput> = {
  round: {
    heartbeatMs: 200,
    missedHeartbeats: 5,
    deadlineMs: 6000,
    voteTimeoutMs: 6000,
    minContributors: 3,
    // Loads bounded tightly: agg-1 (capacity 4, below) takes three sites, agg-2 and agg-3 one each.
    epsilon: 0.01,
    // The hostile members' failures may freeze training; it probes again after this.
    breaker: { coolDownMs: 3000 },
    // Two aggregators send to the coordinator; the third (agg-2) sends to its parent (agg-1).
    tree: { rootFanIn: 2, fanIn: 4, levelWaitMs: 1500 },
  },
  learning: { model: 'logreg', trainLimit: 1500, testLimit: 200, epochs: 1, batchSize: 20 },
  // A snapshot at every commit: site-5 writes one whenever its turn comes.
  history: { snapshotEvery: 1 },
  log: { level: 'error' },
};

/** Who sends each kind, and who receives it (the table's words). */
const ROUTE: Record<FuzzKind, string> = {
  heartbeat: 'site-5 → coordinator',
  'update-block': 'site-5 → its aggregator',
  'update-manifest': 'site-5 → its aggregator',
  vote: 'site-5 → coordinator',
  switched: 'site-5 → coordinator',
  snapshot: 'site-5 → coordinator',
  'aggregator-heartbeat': 'agg-2, agg-3 → coordinator',
  'partial-block': 'agg-2, agg-3 → coordinator',
  'partial-manifest': 'agg-2, agg-3 → coordinator',
  'subpartial-block': 'agg-2 → agg-1',
  'subpartial-manifest': 'agg-2 → agg-1',
};

/** Short names of the mutation classes (docs/security.md's summary explains each). */
const SHORT: Record<MutationClass, string> = {
  'numbers at edges': 'numbers at edges',
  'strings (other members’ ids, empty, long, odd characters)': 'strings',
  'byte fields (truncated, extended, flipped, emptied, random, another round’s)': 'byte fields',
  'repeated fields (dropped, duplicated, reordered, cleared)': 'repeated fields',
  'booleans flipped, sub-messages cleared': 'booleans and sub-messages',
  'protobuf wire (unknown, repeated or mistyped fields, cut short)': 'protobuf wire',
  'wire frame (magic, version, kind, reserved, length, truncated, trailing)': 'wire frame',
  'envelope and signature fields': 'envelope and signature',
  'transport headers (`Cohort-Id`, `Cohort-Chunk`, `Cohort-Length`, `Cohort-Crc`)': 'framing headers',
  'NATS headers (`Nats-Msg-Id`, `Nats-Rollup`, `Nats-Expected-*`, spoofed `Cohort-Error`, repeated)':
    'NATS headers',
  'reply subject (another inbox, JetStream API, service subjects)': 'reply subject',
  'subject (another member’s, another kind’s)': 'subject',
};

const ledger = new AttackLedger('fuzz', [
  'Issue 22 acceptance',
  `Mutants of one kind (sender → receiver), fast-check seed ${SEED}`,
  'Outcome',
]);

/** What became of one mutant (the property's subject). */
interface Observed {
  readonly run: number;
  readonly kind: FuzzKind;
  readonly sender: string;
  readonly plan: FuzzPlan;
  readonly mutant: Mutant;
  /** Whether the original was held back and sent after the mutant. */
  readonly before: boolean;
  /** What the stateless checks say the receiver must answer (undefined: its state decides). */
  readonly predicted: string | undefined;
  /** Whether the receiver answered as predicted (true when nothing was). */
  readonly asPredicted: boolean;
  readonly result: SendResult;
  /** `refused CODE`, `dropped TRANSPORT_REASON`, `accepted`, `server CODE`, or a failure. */
  readonly outcome: string;
  /** The counters that rose across it. */
  readonly rose: readonly string[];
}

describe('a structure-aware fuzzer against a live federation', () => {
  let f: Federation;
  let coordinator: CoordinatorHandle;
  let coordinatorCtx: MemberContext | undefined;
  const tap = new TemplateTap(F);
  const aggregators = new Map<string, AggregatorService>();
  const agents = new Map<string, AgentService>();
  /** Each hostile member's own second connection, which sends the mutants. */
  const fuzzers = new Map<string, MemberContext>();
  const decided: RoundSummary[] = [];
  const observed: Observed[] = [];
  const crashed: string[] = [];
  /** Rounds committed at each checkpoint (a round opened after the batch before it). */
  const checkpoints: number[] = [];
  let lastOpened = 0;
  let heapGrowth = 0;

  /**
   * Between batches of mutants: nothing is held back or sent until a round opened after the batch
   * commits (honest rounds keep committing), and the log read so far verifies and is one chain.
   */
  async function checkpoint(): Promise<void> {
    tap.releaseAll();
    const mark = lastOpened;
    await waitFor(
      `a round opened after mutant batch ${checkpoints.length + 1} to commit`,
      () => decided.some((d) => d.round > mark && d.commit),
      90_000,
    );
    expectSingleChain(await f.decisions(), f.genesis);
    checkpoints.push(decided.find((d) => d.round > mark && d.commit)!.round);
  }

  /** Every refusal counter of every receiver: `<receiver> <code>` → count. */
  function counters(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [k, v] of Object.entries(coordinator.stats().rejectedByReason)) out.set(`coordinator ${k}`, v);
    for (const [id, a] of aggregators) {
      const s = a.stats();
      for (const [k, v] of Object.entries(s.rejections)) out.set(`${id} BLOCK_${k}`, v);
      for (const [k, v] of Object.entries(s.transportDrops)) out.set(`${id} TRANSPORT_${k}`, v);
      out.set(`${id} refusals`, s.rejected);
    }
    return out;
  }

  function rose(before: Map<string, number>): string[] {
    return [...counters()].filter(([k, v]) => v > (before.get(k) ?? 0)).map(([k]) => k);
  }

  /**
   * A snapshot site-5 could offer while its own turn to write one has not come: of the latest
   * commit (its hash, height, round, model hash and strategy state), signed with site-5's key and
   * sealed with the federation data key, but holding another model (genesis's), which nothing
   * without the data key can tell (forged-snapshot.ts).
   */
  async function snapshotTemplate(): Promise<Template> {
    const d = (await f.decisions()).filter((x) => x.commit).at(-1)!;
    const empty = new Float32Array(0);
    let step = 0;
    while (!bytesEqual(strategyStateHash({ strategy: 'fedavg', step, m: empty, v: empty }), d.stateHash)) {
      step++;
      expect(step, 'the FedAvg step of the latest commit').toBeLessThan(100_000);
    }
    const data = forgeSnapshot({
      federation: F,
      commit: { hash: d.commitHash, height: d.height, round: d.round, kind: 'round', modelHash: d.modelHash },
      logSequence: d.sequence,
      parameters: federationGenesis(f.dep.config).parameters,
      state: { strategy: 'fedavg', step, m: empty, v: empty },
      dataKey: loadSiteDataKey(f.dep.config.members!.keysDir, HOSTILE_SITE, F),
      signer: HOSTILE_SITE,
      signing: fuzzers.get(HOSTILE_SITE)!.signing,
    });
    const subject = f.coord.subjects.snapshot(HOSTILE_SITE);
    return { kind: 'snapshot', sender: HOSTILE_SITE, subject, data, at: Date.now() };
  }

  beforeAll(async () => {
    f = await Federation.create(F, { aggregators: 3, sites: 5, overrides: OVERRIDES });
    aggregators.set(HONEST_AGGREGATOR, await f.startAggregator(HONEST_AGGREGATOR));
    for (const id of HOSTILE_AGGREGATORS) {
      aggregators.set(id, await startAggregator(tap.wrap(await f.member(id))));
    }
    for (const site of HONEST_SITES) agents.set(site, await f.startAgent(site));
    agents.set(HOSTILE_SITE, await startAgent(tap.wrap(await f.member(HOSTILE_SITE))));
    for (const id of [HOSTILE_SITE, ...HOSTILE_AGGREGATORS]) fuzzers.set(id, await f.member(id));
    for (const [id, a] of agents) void a.halted.then((err) => crashed.push(`${id}: ${err.message}`));
    // The coordinator weighs the honest aggregator four times the others (`capacity`, which only
    // it reads): agg-1 holds three honest sites, so a round can commit whatever agg-2 and agg-3 do
    // with their own partials; agg-2 keeps site-2 (below agg-1), agg-3 site-5.
    const input = parseYaml(readFileSync(f.dep.configPath, 'utf8')) as {
      members: { aggregators: { id: string; capacity: number }[] };
    };
    for (const a of input.members.aggregators) a.capacity = a.id === HONEST_AGGREGATOR ? 4 : 1;
    coordinatorCtx = await openMember(parseConfig(input, { source: 'fuzz coordinator' }), f.dep.coordinator);
    coordinator = startCoordinator(coordinatorCtx, {
      rounds: 100_000, // until the suite stops it
      switchWaitMs: 2000,
      onEvent: (e) => {
        if (e.type === 'round-open') lastOpened = Math.max(lastOpened, e.round);
        if (e.type === 'decision') decided.push(e.summary);
      },
    });
    coordinator.done.catch((err: Error) => crashed.push(`coordinator: ${err.message}`));
    await waitFor('a first committed round', () => decided.some((d) => d.commit), 90_000);
  }, 150_000);

  afterAll(async () => {
    tap.releaseAll();
    await coordinator?.stop().catch(() => undefined);
    await coordinatorCtx?.close().catch(() => undefined);
    for (const a of agents.values()) await a.stop().catch(() => undefined);
    for (const a of aggregators.values()) await a.stop().catch(() => undefined);
    await f?.stop();
  });

  it('every mutant is refused with a counted reason, dropped and counted, or accepted', async () => {
    // A template of every kind the services send before the run starts (a snapshot of site-5
    // comes only when its turn to write does: until then one of genesis stands in).
    const end = Date.now() + 30_000;
    while (Date.now() < end && FUZZ_KINDS.some((k) => k !== 'snapshot' && !tap.seen.has(k))) {
      await tap.next(500);
    }
    expect(
      FUZZ_KINDS.filter((k) => k !== 'snapshot' && !tap.seen.has(k)),
      'kinds the hostile services never sent',
    ).toEqual([]);
    const members = [f.dep.coordinator, ...f.dep.aggregators, ...f.dep.sites, 'auditor-1', F];
    const oracle: OracleContext = {
      federation: F,
      keys: f.coord.keys,
      maxCiphertextBytes: f.coord.ckks.maxCiphertextBytes,
      maxContributors: f.dep.config.codec.maxContributors,
      snapshotMaxBytes: maxSnapshotBytes(coordinator.stats().parameters),
      parameters: coordinator.stats().parameters,
    };
    const heapBefore = process.memoryUsage().heapUsed;
    let run = 0;
    let lastId = messageId();
    /** Milliseconds the run may spend waiting for fresh templates, in all. */
    let waitBudget = WAIT_BUDGET_MS;
    tap.holding = true;
    const property = fc.asyncProperty(fc.constantFrom(...FUZZ_KINDS), fuzzPlan, async (kind, plan) => {
      run++;
      if (run > 1 && (run - 1) % BATCH === 0) {
        await checkpoint();
        tap.holding = true;
      }
      // A mutant meant to precede its original waits a while for a fresh one (within a budget).
      if (plan.order === 'before' && WAITS_FOR.has(kind) && !tap.fresh(kind) && waitBudget > 0) {
        const started = Date.now();
        const until = started + Math.min(3000, waitBudget);
        while (Date.now() < until && !tap.fresh(kind)) await tap.next(until - Date.now());
        waitBudget -= Date.now() - started;
      }
      // Site-5 writes a snapshot only when its turn comes: until it has, one it could offer.
      const taken = tap.take(kind) ?? { template: await snapshotTemplate(), fresh: false, done: () => {} };
      const { template } = taken;
      const m = fuzzers.get(template.sender)!;
      const ctx: MutationContext = {
        federation: F,
        signing: m.signing,
        members,
        history: tap.history(kind, template),
        logStream: m.subjects.logStream,
        contributionsStream: m.subjects.contributionsStream,
      };
      const mutant = mutate(template, plan, ctx, crcHex(template.data));
      const id = messageId();
      const headers = sentHeaders(mutant.data, mutant, id, crcHex(mutant.data));
      if (headers['Cohort-Id'] === 'fuzz-reused-id') headers['Cohort-Id'] = lastId;
      lastId = id;
      // What the receiver must answer whatever its state, from the same checks run here.
      const predicted =
        mutant.subject !== undefined || mutant.substituted === true
          ? undefined
          : (transportVerdict(template.subject, mutant.data, mutant, headers, intakeCap(kind, oracle)) ??
            statelessVerdict(kind, template, mutant.data, oracle));
      const before = counters();
      const toAggregator = kind.startsWith('update') || kind.startsWith('subpartial');
      const result = await sendMutant(m, template, mutant, {
        timeoutMs: predicted?.startsWith('dropped') ? 800 : toAggregator ? 5000 : 3000,
        headers,
      }).finally(() => taken.done());
      // A drop is counted as the chunk arrives; a silent mutant gets a moment to be counted.
      let up = rose(before);
      if (result.t === 'silent') {
        await waitFor('a drop counted', () => rose(before).length > 0, 800).catch(() => undefined);
        up = rose(before);
      }
      const outcome = classify(result, up);
      const asPredicted = predicted === undefined || matches(predicted, result, up);
      observed.push({
        run,
        kind,
        sender: template.sender,
        plan,
        mutant,
        before: taken.fresh,
        predicted,
        asPredicted,
        result,
        outcome,
        rose: up,
      });
      const where = `run ${run}, ${kind} of ${template.sender} (${taken.fresh ? 'before' : 'after'} the original): ${mutant.class}: ${mutant.what}${mutant.resigned ? ' (re-signed)' : ''} → ${outcome} [${up.join(', ')}]`;
      expect(outcome, where).not.toMatch(/^(unanswered|uncounted|unstable)/);
      expect(asPredicted, `${where}; predicted ${predicted}`).toBe(true);
    });
    await fc.assert(property, { seed: SEED, numRuns: RUNS, endOnFailure: true });
    await checkpoint();
    heapGrowth = process.memoryUsage().heapUsed - heapBefore;
    if (process.env['COHORT_FUZZ_DUMP'] !== undefined) {
      const { writeFileSync } = await import('node:fs');
      const line = (o: Observed) =>
        [
          o.run,
          o.kind,
          o.sender,
          o.before ? 'before' : 'after',
          o.mutant.class,
          o.mutant.what,
          o.mutant.resigned,
          o.predicted ?? '',
          o.outcome,
          o.rose.join(','),
        ].join('\t');
      writeFileSync(process.env['COHORT_FUZZ_DUMP'], `${observed.map(line).join('\n')}\n`);
    }

    for (const kind of FUZZ_KINDS) {
      const mine = observed.filter((o) => o.kind === kind);
      const classes = [...new Set(mine.map((o) => SHORT[o.mutant.class]))].sort();
      const resigned = mine.filter((o) => o.mutant.resigned).length;
      const transport = mine.filter((o) => o.predicted?.startsWith('dropped'));
      const stateless = mine.filter((o) => o.predicted?.startsWith('refused'));
      const rest = mine.filter((o) => o.predicted === undefined);
      const codes = (list: readonly Observed[]) =>
        [...new Set(list.map((o) => o.predicted!.split(' ')[1]!))]
          .sort()
          .map((c) => `\`${c}\``)
          .join(', ');
      const facts: Fact[] = [];
      if (transport.length > 0) {
        facts.push(
          holds(
            `dropped by its receiver’s transport before any handler, as predicted, and counted: ${codes(transport)}`,
            transport.every((o) => o.asPredicted),
          ),
        );
      }
      if (stateless.length > 0) {
        facts.push(
          holds(
            `refused by the receiver’s stateless checks (frame, envelope, signer, signature, header), as predicted, and counted: ${codes(stateless)}`,
            stateless.every((o) => o.asPredicted),
          ),
        );
      }
      facts.push(
        holds(
          'the others met the round’s state: each refused with a stable code its receiver counted, dropped by its transport and counted, refused by nats-server, or accepted (harmless: last row)',
          rest.every((o) =>
            /^(refused [A-Z_]+( \(counted as [A-Z_+]+\))?|dropped [A-Z_+]+|server |accepted)/.test(o.outcome),
          ),
        ),
      );
      ledger.record(
        2,
        `\`${kind}\` (${ROUTE[kind]}): ${mine.length} mutants (${classes.join(', ')}; ${resigned} signed with the sender’s own key)`,
        facts,
      );
    }
  }, 400_000);

  it('every accepted mutant was harmless: the log, the audit, the heads, no honest member struck', async () => {
    const decisions = await f.decisions(); // LogHistory verified every entry
    expectSingleChain(decisions, f.genesis);
    const commits = decisions.filter((d) => d.commit);
    const head = hex(commits.at(-1)!.commitHash);
    for (const site of HONEST_SITES) {
      await waitFor(`${site} at the logged head`, () => f.storeHead(site)?.hash === head, 30_000).catch(
        () => undefined,
      );
    }
    const atHead = HONEST_SITES.filter((s) => f.storeHead(s)?.hash === head);
    const honest = [...HONEST_SITES, HONEST_AGGREGATOR];
    const struck = decisions.flatMap((d) =>
      d.exclusions.filter((x) => honest.includes(x.site)).map((x) => `${d.round}:${x.site}`),
    );
    const blamed = decisions.flatMap((d) =>
      d.culprits.filter((c) => honest.includes(c.member)).map((c) => `${d.round}:${c.member}`),
    );
    const report = await auditLive(f.dep.configPath);
    // Rounds go on meanwhile: the audit's log may be longer than the decisions read above.
    const audited = report.rounds.filter((r) => r.outcome === 'commit' && r.kind === 'round');
    const roundCommits = audited.length;
    // The details first, for a failing run's report; the table's fact below restates it.
    expect({
      problems: report.problems,
      unchecked: report.unchecked,
      recomputed: report.checked.recomputed,
      verified: audited.every((r) => r.aggregate === 'verified'),
    }).toEqual({ problems: [], unchecked: [], recomputed: roundCommits, verified: true });
    ledger.record(2, `all ${observed.length} mutants, in ${checkpoints.length} batches of at most ${BATCH}`, [
      holds(
        'after each batch a round opened afterwards commits (honest rounds keep committing)',
        checkpoints.length === Math.ceil(RUNS / BATCH),
      ),
      holds('the log verifies (signatures, hash chain, history rules) and is one chain', true),
      holds(
        '`cohort audit verify`: no problem, nothing unchecked, every committed aggregate re-added from the stored contributions the log lists (each committed model is their FedAvg, the model every YES voter hashed)',
        report.problems.length === 0 &&
          report.unchecked.length === 0 &&
          report.checked.recomputed === roundCommits &&
          roundCommits >= checkpoints.length,
      ),
      holds('every honest site holds the logged head', atHead.length === HONEST_SITES.length),
      holds(
        'no honest site or aggregator is ever struck or named a culprit',
        struck.length === 0 && blamed.length === 0,
      ),
      holds(
        `no service crashed; the heap of the test process (every member runs in it) grew by less than ${HEAP_BOUND / 2 ** 20} MiB`,
        crashed.length === 0 && heapGrowth < HEAP_BOUND,
      ),
    ]);
  }, 200_000);

  it('the fuzz summary in docs/security.md is the one this run observed', () => {
    ledger.verify();
  });
});

/**
 * Whether the receiver answered as `predicted`: `dropped TRANSPORT_X` (no answer, and a receiver
 * counted the drop `X`) or `refused CODE` (that code, and a receiver counted it).
 */
function matches(predicted: string, result: SendResult, up: readonly string[]): boolean {
  const [what, code] = predicted.split(' ') as [string, string];
  const counted = up.some((k) => k.endsWith(` ${code}`));
  if (what === 'dropped') return result.t === 'silent' && counted;
  return result.t === 'refused' && result.code === code && counted;
}

/** The outcome of one mutant from what its sender saw and which counters rose. */
function classify(result: SendResult, up: readonly string[]): string {
  const stable = (code: string) => /^[A-Z][A-Z0-9_]*$/.test(code) && code !== 'ERROR';
  switch (result.t) {
    case 'accepted':
      return 'accepted';
    case 'sender':
      return `server ${result.code}`;
    case 'refused': {
      if (!stable(result.code)) return `unstable ${result.code}`;
      if (up.some((k) => k.endsWith(` ${result.code}`))) return `refused ${result.code}`;
      // An aggregator counts by block reason only: a refusal of another code is counted under one.
      const mapped = up.filter((k) => / BLOCK_/.test(k)).map((k) => k.split(' ')[1]!);
      if (!result.code.startsWith('BLOCK_') && mapped.length > 0) {
        return `refused ${result.code} (counted as ${[...new Set(mapped)].sort().join('+')})`;
      }
      return `uncounted ${result.code}`;
    }
    case 'silent': {
      const drops = up.filter((k) => / TRANSPORT_/.test(k)).map((k) => k.split(' ')[1]!);
      if (drops.length > 0) return `dropped ${[...new Set(drops)].sort().join('+')}`;
      return 'unanswered';
    }
  }
}
