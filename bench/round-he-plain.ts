// The round bench's first part: the he round with the real services against a plaintext FedAvg
// round, each site a process of its own in both arms (`cohort agent`, or the plaintext site worker
// bench/round-plain-site.ts), over the same nats-server, users and subjects.
import { fileURLToPath } from 'node:url';
import type { Assignment } from '../src/protocol/index.ts';
import { federationGenesis } from '../src/services/agent/genesis.ts';
import { type CoordinatorEvent, startCoordinator } from '../src/services/coordinator/index.ts';
import { type LocalDeployment, type MemberContext, openMember } from '../src/services/index.ts';
import type { TransportSubscription } from '../src/transport/index.ts';
import { packFloats, unpackFloats } from './round-plain-wire.ts';
import { type BenchChild, spawnCohort, spawnScript, stopAll } from './round-processes.ts';

const PLAIN_SITE = fileURLToPath(new URL('./round-plain-site.ts', import.meta.url));
const say = (s: string) => process.stderr.write(`[round bench] ${s}\n`);

/** What the he arm measured. */
export interface HeResult {
  durations: number[];
  /** Every COMMIT → switched latency the coordinator measured, ms, with its round. */
  switches: { round: number; latencyMs: number }[];
  committed: number;
  aborted: number;
  assignments: readonly Assignment[];
  uploadBytes: number[];
  /** Per round: RoundOpen → PREPARE published (train, encrypt, upload, verify, sum). */
  openToPrepareMs: number[];
  /** Per round: PREPARE → decision (decrypt, apply, durable candidate, votes, log append). */
  prepareToDecisionMs: number[];
}

/** `rounds` he rounds: aggregators and sites as `cohort` processes, the coordinator in this process. */
export async function runHeArm(dep: LocalDeployment, rounds: number): Promise<HeResult> {
  const children: BenchChild[] = [];
  let coordCtx: MemberContext | undefined;
  try {
    for (const a of dep.aggregators)
      children.push(spawnCohort(a, ['aggregator', '--config', dep.configPath, '--member', a]));
    for (const s of dep.sites)
      children.push(spawnCohort(s, ['agent', '--config', dep.configPath, '--member', s]));
    coordCtx = await openMember(dep.config, dep.coordinator);
    let assignments: readonly Assignment[] = [];
    const switches: HeResult['switches'] = [];
    const marks = new Map<number, { open: number; prepare: number; decision: number }>();
    const onEvent = (e: CoordinatorEvent) => {
      const now = performance.now();
      if (e.type === 'round-open') {
        assignments = e.assignments;
        marks.set(e.round, { open: now, prepare: now, decision: now });
      }
      if (e.type === 'prepare') marks.get(e.round)!.prepare = now;
      if (e.type === 'decision') marks.get(e.summary.round)!.decision = now;
      if (e.type === 'switched') switches.push({ round: e.round, latencyMs: e.latencyMs });
      if (e.type === 'decision')
        say(
          `he round ${e.summary.round}: ${e.summary.commit ? 'COMMIT' : `ABORT (${e.summary.reason})`} in ${e.summary.durationMs} ms`,
        );
    };
    // The coordinator waits for every member's heartbeat (the quorum) before round 1.
    const coordinator = startCoordinator(coordCtx, { rounds, onEvent, switchWaitMs: 10_000 });
    const exit = Promise.race(
      children.map((c) =>
        c.exited.then((code) => Promise.reject(new Error(`${c.name} exited (${code}):\n${c.stderr}`))),
      ),
    );
    const summary = await Promise.race([coordinator.done, exit]);
    return {
      durations: summary.rounds.map((r) => r.durationMs),
      switches,
      committed: summary.committed,
      aborted: summary.aborted,
      assignments,
      uploadBytes: summary.rounds.map((r) => r.uploadBytes),
      openToPrepareMs: [...marks.values()].map((m) => m.prepare - m.open),
      prepareToDecisionMs: [...marks.values()].map((m) => m.decision - m.prepare),
    };
  } finally {
    await stopAll(children);
    await coordCtx?.close();
  }
}

/** Resolves when `cond()` holds, polling every 2 ms; rejects after `timeoutMs`. */
async function until(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/**
 * `rounds` plaintext FedAvg rounds: the sites are bench/round-plain-site.ts processes (same
 * training as the agent), the aggregators and the coordinator plain float32 sums in this process,
 * over the same server, users and subjects as the he arm; sites go to the aggregators of the he
 * arm's last assignment. Returns each round's RoundOpen → every site acked the new model, ms.
 */
export async function runPlainArm(
  dep: LocalDeployment,
  assignments: readonly Assignment[],
  rounds: number,
): Promise<number[]> {
  const cfg = dep.config;
  const nParams = federationGenesis(cfg).parameters.length;
  const contexts: MemberContext[] = [];
  const subs: TransportSubscription[] = [];
  const children: BenchChild[] = [];
  const open = async (id: string) => {
    const c = await openMember(cfg, id);
    contexts.push(c);
    return c;
  };
  const aggOf = new Map(assignments.map((a) => [a.site, a.aggregator]));
  const aggIds = [...new Set(assignments.map((a) => a.aggregator))];
  try {
    for (const s of dep.sites)
      children.push(spawnScript(s, PLAIN_SITE, [dep.configPath, s, aggOf.get(s) ?? dep.aggregators[0]!]));
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

    // Coordinator: sum partials, average, publish the model, count acks.
    let w = federationGenesis(cfg).parameters.slice();
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
    for (const c of children) await c.waitEvent('ready', 120_000);

    const durations: number[] = [];
    for (let r = 1; r <= rounds; r++) {
      round = r;
      partials = 0;
      weight = 0;
      acks = 0;
      sum = new Float32Array(nParams);
      const t0 = performance.now();
      const openMsg = new Uint8Array(8);
      new DataView(openMsg.buffer).setUint32(0, r, true);
      await coord.transport.publish(S.roundOpen, openMsg);
      await until(() => acks === dep.sites.length, 300_000, `plaintext round ${r} acks`);
      durations.push(performance.now() - t0);
      say(`plaintext round ${r}: ${durations.at(-1)!.toFixed(0)} ms`);
    }
    return durations;
  } finally {
    await Promise.allSettled(subs.map((s) => s.unsubscribe()));
    await stopAll(children);
    for (const c of contexts) await c.close();
  }
}
