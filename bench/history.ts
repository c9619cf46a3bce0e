// `npm run bench -- history`: what recovery costs, as ratios to one round of the same federation
// in the same run (docs/round-protocol.md, "Catch-up, snapshots, recovery"): catch-up by replay per
// commit, a join from a snapshot, and a rollback round; at the 2NN's size and for a 10M-parameter
// MLP (784 → 12,500 → 10).
//
// Each scale runs the real services in this process over a private nats-server: a coordinator,
// one aggregator and three sites train R rounds (snapshots every 2 commits); then a fourth site
// joins three ways, each timed from startAgent() to READY at the head:
//   idle     its store already at the head: the fixed cost of starting an agent;
//   replay   an empty store, snapshots off (AgentOptions.snapshots): it replays all R commits
//            from genesis;
//   snapshot an empty store with the data key: it joins from the latest snapshot, replays the rest.
// Finally a rollback three commits back runs as one more round.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { modelLayout } from '../federation/index.ts';
import type { CohortConfigInput } from '../src/config/index.ts';
import { modelSpecFor } from '../src/round/index.ts';
import { type AgentService, startAgent } from '../src/services/agent/index.ts';
import { type AggregatorService, startAggregator } from '../src/services/aggregator/index.ts';
import { startCoordinator } from '../src/services/coordinator/index.ts';
import { openLogReader } from '../src/services/federation-log/index.ts';
import { createLocalDeployment, type MemberContext, openMember } from '../src/services/index.ts';
import { type BenchRow, printTable, writeResults } from './table.ts';

const say = (s: string) => process.stderr.write(`[history bench] ${s}\n`);
const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

interface Scale {
  readonly name: string;
  readonly learning: CohortConfigInput['learning'];
  /** Training rounds before the joins (snapshots at even heights). */
  readonly rounds: number;
}

const SCALES: readonly Scale[] = [
  { name: '2NN', learning: { model: '2nn', trainLimit: 3000, testLimit: 100 }, rounds: 5 },
  {
    name: '10M MLP',
    learning: { model: 'mlp', hidden: [12_500], trainLimit: 60, testLimit: 100, batchSize: 10 },
    rounds: 5,
  },
];

interface ScaleResult {
  readonly params: number;
  readonly roundMs: number;
  readonly idleJoinMs: number;
  readonly replayJoinMs: number;
  readonly replayed: number;
  readonly snapshotJoinMs: number;
  readonly snapshotHeight: number;
  readonly replayedAfterSnapshot: number;
  readonly rollbackMs: number;
}

async function runScale(scale: Scale): Promise<ScaleResult> {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-history-bench-'));
  const dep = await createLocalDeployment({
    dir,
    federation: 'histbench',
    aggregators: 1,
    sites: 4,
    overrides: {
      round: {
        deadlineMs: 600_000,
        voteTimeoutMs: 600_000,
        heartbeatMs: 500,
        missedHeartbeats: 20,
        quorum: 4,
      },
      history: { snapshotEvery: 2 },
      learning: scale.learning,
      nats: { timeoutMs: 30_000 },
      log: { level: 'warn' },
    },
  });
  const contexts: MemberContext[] = [];
  const open = async (id: string) => {
    const c = await openMember(dep.config, id);
    contexts.push(c);
    return c;
  };
  const aggregators: AggregatorService[] = [];
  const agents: AgentService[] = [];
  try {
    aggregators.push(await startAggregator(await open('agg-1')));
    for (const s of ['site-1', 'site-2', 'site-3']) agents.push(await startAgent(await open(s)));
    const coord = await open('coordinator');
    const summary = await startCoordinator(coord, { rounds: scale.rounds, switchWaitMs: 60_000 }).done;
    if (summary.committed !== scale.rounds)
      throw new Error(`only ${summary.committed} of ${scale.rounds} rounds committed`);
    const roundMs = mean(summary.rounds.slice(1).map((r) => r.durationMs));
    say(`${scale.name}: ${scale.rounds} rounds, ${roundMs.toFixed(0)} ms each after the first`);

    // The fourth site joins, three ways.
    const store = join(dep.config.paths.dataDir, 'site-4');
    const join4 = async (snapshots = true): Promise<{ ms: number; agent: AgentService }> => {
      const ctx = await open('site-4');
      const t0 = performance.now();
      const agent = await startAgent(ctx, { snapshots });
      return { ms: performance.now() - t0, agent };
    };
    const replay = await join4(false);
    const replayed = replay.agent.stats().replayed;
    await replay.agent.stop();
    if (replayed !== scale.rounds)
      throw new Error(`the replay join replayed ${replayed} of ${scale.rounds} commits (not a measurement)`);
    const idle = await join4();
    await idle.agent.stop();
    rmSync(store, { recursive: true, force: true });
    const snap = await join4();
    const replayedAfterSnapshot = snap.agent.stats().replayed;
    if (snap.agent.stats().snapshotsJoined !== 1) throw new Error('the snapshot join did not use a snapshot');
    agents.push(snap.agent);
    say(
      `${scale.name}: join idle ${idle.ms.toFixed(0)} ms, replay of ${replayed} commits ${replay.ms.toFixed(0)} ms, snapshot + ${replayedAfterSnapshot} ${snap.ms.toFixed(0)} ms`,
    );

    // A rollback three commits back, as one more round with all four sites.
    const reader = await openLogReader(coord.transport.connection, {
      federation: 'histbench',
      coordinator: 'coordinator',
      keys: coord.keys,
    });
    let target: Uint8Array | undefined;
    for await (const e of reader.entries()) {
      const d = e.record.decision;
      if (d?.commit && d.height === scale.rounds - 3) target = d.commitHash;
    }
    const handle = startCoordinator(coord, { rounds: scale.rounds + 1, switchWaitMs: 60_000 });
    void handle.rollback(target!, 'bench');
    const rolled = await handle.done;
    const rollback = rolled.rounds.find((r) => r.kind === 'rollback');
    if (!rollback?.commit) throw new Error(`the rollback round did not commit: ${rollback?.reason}`);
    say(`${scale.name}: rollback round ${rollback.durationMs} ms`);
    return {
      params: modelLayout(modelSpecFor(dep.config)).parameterCount,
      roundMs,
      idleJoinMs: idle.ms,
      replayJoinMs: replay.ms,
      replayed,
      snapshotJoinMs: snap.ms,
      snapshotHeight: scale.rounds - (scale.rounds % 2),
      replayedAfterSnapshot,
      rollbackMs: rollback.durationMs,
    };
  } finally {
    for (const a of agents) await a.stop().catch(() => undefined);
    for (const a of aggregators) await a.stop().catch(() => undefined);
    for (const c of contexts) await c.close().catch(() => undefined);
    await dep.stop();
    if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
  }
}

export async function runHistoryBench(): Promise<void> {
  const only = process.env['COHORT_BENCH_HISTORY_SCALES']?.split(',');
  const rows: BenchRow[] = [];
  const results: Record<string, ScaleResult> = {};
  for (const scale of SCALES) {
    if (only !== undefined && !only.includes(scale.name)) continue;
    const r = await runScale(scale);
    results[scale.name] = r;
    const perCommit = (r.replayJoinMs - r.idleJoinMs) / r.replayed;
    const section = `${scale.name} (${r.params.toLocaleString('en-US')} params)`;
    // Recovery is judged against one round of the same federation, measured in the same run.
    const round = { metric: 'one round, same federation', value: r.roundMs };
    rows.push(
      {
        section,
        metric: 'one round (mean after the first)',
        value: r.roundMs,
        unit: 'ms',
        compare: 'baseline',
        detail: true,
      },
      {
        section,
        metric: 'agent start, nothing to replay',
        value: r.idleJoinMs,
        unit: 'ms',
        compare: '',
        detail: true,
      },
      {
        section,
        metric: `catch-up per replayed commit (${r.replayed} from genesis)`,
        value: perCommit,
        unit: 'ms',
        compare: '',
        floor: round,
      },
      {
        section,
        metric: `snapshot join (height ${r.snapshotHeight}, +${r.replayedAfterSnapshot} replayed)`,
        value: r.snapshotJoinMs - r.idleJoinMs,
        unit: 'ms',
        compare: '',
        floor: round,
      },
      {
        section,
        metric: 'rollback round (3 commits back, 4 sites)',
        value: r.rollbackMs,
        unit: 'ms',
        compare: '',
        floor: round,
      },
    );
  }
  printTable('Recovery costs beside one round of the same federation (same run)', rows);
  const path = writeResults('history', rows, { scales: results });
  console.log(`\nwrote ${path}`);
}
