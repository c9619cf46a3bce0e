// Hand-built federation histories for the `versions` tests: the log records of a scenario (round
// opens, decisions, a snapshot) with the commits and models they name, valid under LogHistory's
// rules. Unit tests fold them in as unsigned entries; integration tests append them with a real
// log writer.
import { sha256 } from '../../crypto/digest/index.ts';
import type {
  AggregateInfo,
  DecisionBody,
  ExclusionRecord,
  LogRecordBody,
} from '../../src/protocol/index.ts';
import { encodeRoundParams, type RoundParams } from '../../src/round/index.ts';
import type { LogEntry, LogRecordInput } from '../../src/services/federation-log/index.ts';
import { type Commit, modelHash, rollbackCommit, roundCommit } from '../../src/versions/index.ts';
import { emptyDecision } from './log-records.ts';

const EMPTY = new Uint8Array(0);
const text = (s: string) => sha256(new TextEncoder().encode(s));

/** Options of one committed round. */
export interface RoundOptions {
  readonly parameters: Float32Array;
  readonly params: Omit<RoundParams, 'round'>;
  /** Sites and weights summed (sorted by site); digests derived from the names. */
  readonly contributors: readonly [site: string, weight: number][];
  readonly voters?: readonly string[];
  readonly missing?: readonly string[];
  readonly exclusions?: readonly ExclusionRecord[];
  readonly nextClip?: number;
}

/** Builds a valid log, record by record, tracking the chain's head. */
export class HistoryScript {
  readonly federation: string;
  /** Commits by height (genesis at 0). */
  readonly commits: Commit[];
  /** Models by height. */
  readonly models: Float32Array[];
  /** Every record so far, in log order. */
  readonly records: LogRecordInput[] = [];

  constructor(federation: string, genesis: { commit: Commit; parameters: Float32Array }) {
    this.federation = federation;
    this.commits = [genesis.commit];
    this.models = [genesis.parameters];
  }

  get head(): Commit {
    return this.commits[this.commits.length - 1]!;
  }

  /** RoundOpen of `round` on the head. */
  open(round: number): LogRecordInput {
    const head = this.head;
    return this.#push({
      roundOpen: {
        federation: this.federation,
        round,
        version: head.height,
        baseCommit: head.hash,
        assignments: [{ site: 'site-1', aggregator: 'agg-1', examples: 600 }],
        bits: 8,
        clip: 1,
        maxContributors: 16,
        crcChunkBytes: 4096,
        deadlineUnixMs: 1_700_000_000_000 + round,
        totalExamples: 600,
        totalParams: 7850,
        attempt: new Uint8Array(16).fill(round & 0xff),
      },
    });
  }

  /** Opens and commits a round (kind `round`); returns its two records and the commit. */
  commitRound(round: number, o: RoundOptions): { records: LogRecordInput[]; commit: Commit } {
    const open = this.open(round);
    const head = this.head;
    const { params, aggregateDigest, commit } = this.#roundCommit(round, o);
    const contributors = o.contributors.map(([site, weight]) => ({
      site,
      digest: text(`update ${site} ${round}`),
      weight,
    }));
    const aggregate: AggregateInfo = {
      encoding: {
        bits: o.params.bits,
        clip: Math.fround(o.params.clip),
        laneBits: 16,
        lanesPerSlot: 2,
        maxContributors: 16,
        scaleBits: 16,
        slots: 4096,
        paramsPerBlock: 8192,
        ckksParamsId: text('ckks'),
      },
      totalParams: o.parameters.length,
      contributors,
      totalWeight: contributors.reduce((a, c) => a + c.weight, 0),
      participants: contributors.length,
      totalExamples: 600,
      object: `round-${round}`,
      objectBytes: 1000 + round,
    };
    const decision = this.#push({
      decision: {
        ...this.#decisionBase(round, head),
        commit: true,
        commitHash: commit.hash,
        modelHash: commit.modelHash,
        height: commit.height,
        aggregateDigest,
        voters: [...(o.voters ?? contributors.map((c) => c.site))],
        kind: 'round',
        params,
        aggregate,
        stateHash: text(`state ${round}`),
        missing: [...(o.missing ?? [])],
        exclusions: (o.exclusions ?? []).map((e) => ({ ...e })),
        nextClip: Math.fround(o.nextClip ?? 0.5),
      },
    });
    this.commits.push(commit);
    this.models.push(o.parameters);
    return { records: [open, decision], commit };
  }

  /** The commit {@link HistoryScript.commitRound} would make now (nothing recorded). */
  nextRoundCommit(round: number, o: Pick<RoundOptions, 'parameters' | 'params'>): Commit {
    return this.#roundCommit(round, o).commit;
  }

  #roundCommit(round: number, o: Pick<RoundOptions, 'parameters' | 'params'>) {
    const params = encodeRoundParams({ round, ...o.params });
    const aggregateDigest = text(`aggregate ${round}`);
    const commit = roundCommit(this.head, {
      round,
      aggregateDigest,
      modelHash: modelHash(o.parameters),
      params,
    });
    return { params, aggregateDigest, commit };
  }

  /** Opens and ABORTs a round (a rollback round when `rollbackTarget` is given). */
  abortRound(round: number, reason: string, rollbackTarget?: Commit): LogRecordInput[] {
    const open = this.open(round);
    const decision = this.#push({
      decision: {
        ...this.#decisionBase(round, this.head),
        reason,
        voters: ['site-1', 'site-2'],
        rollbackTarget: rollbackTarget?.hash ?? EMPTY,
      },
    });
    return [open, decision];
  }

  /** Opens and commits a rollback round to `target` (a commit below the head). */
  rollbackRound(round: number, target: Commit): { records: LogRecordInput[]; commit: Commit } {
    const open = this.open(round);
    const head = this.head;
    const commit = rollbackCommit(head, target, round);
    const decision = this.#push({
      decision: {
        ...this.#decisionBase(round, head),
        commit: true,
        commitHash: commit.hash,
        modelHash: commit.modelHash,
        height: commit.height,
        voters: ['site-1', 'site-2'],
        kind: 'rollback',
        params: commit.params,
        rollbackTarget: target.hash,
        stateHash: text(`state ${round}`),
        nextClip: Math.fround(0.5),
      },
    });
    this.commits.push(commit);
    this.models.push(this.models[target.height]!);
    return { records: [open, decision], commit };
  }

  /** A snapshot record of the commit at `height`. */
  snapshot(height: number, site: string): LogRecordInput {
    const commit = this.commits[height]!;
    return this.#push({
      snapshot: {
        commitHash: commit.hash,
        height,
        object: `snapshot-${height}`,
        digest: text(`snapshot ${height}`),
        bytes: 4000 + height,
        site,
      },
    });
  }

  #decisionBase(round: number, head: Commit): DecisionBody {
    return { ...emptyDecision(this.federation, round, head), nextClip: Math.fround(0.5) };
  }

  #push(record: LogRecordInput): LogRecordInput {
    this.records.push(record);
    return record;
  }
}

/** `parameters` with every value moved by `scale · sin(i + seed)` (deterministic, distinct per seed). */
export function perturbed(parameters: Float32Array, seed: number, scale: number): Float32Array {
  return parameters.map((x, i) => x + scale * Math.sin(i + seed));
}

/**
 * The scenario both `versions` tests use, after `genesis`:
 * round 1 COMMIT @1 (site-1, site-2, site-3; lr 0.1, clip 1, bits 8);
 * round 2 COMMIT @2 (site-1, site-2; lr 0.05, clip 0.5; site-3 missing and excluded);
 * a snapshot of @2 by site-1; round 3 ABORT ("site-2 voted NO");
 * round 4 rollback to @1 (@3); round 5 COMMIT @4 (site-1, site-2; bits 4).
 */
export function versionsScenario(
  federation: string,
  genesis: { commit: Commit; parameters: Float32Array },
): HistoryScript {
  const s = new HistoryScript(federation, genesis);
  const base = { strategy: 'fedavg', bits: 8, clip: 1, learningRate: 0.1 };
  s.commitRound(1, {
    parameters: perturbed(genesis.parameters, 1, 0.01),
    params: base,
    contributors: [
      ['site-1', 100],
      ['site-2', 200],
      ['site-3', 300],
    ],
  });
  s.commitRound(2, {
    parameters: perturbed(s.models[1]!, 2, 0.02),
    params: { ...base, clip: 0.5, learningRate: 0.05 },
    contributors: [
      ['site-1', 100],
      ['site-2', 200],
    ],
    voters: ['site-1', 'site-2'],
    missing: ['site-3'],
    exclusions: [{ site: 'site-3', strikes: 1, sinceRound: 2, atHeight: 1, excluded: true }],
    nextClip: 0.25,
  });
  s.snapshot(2, 'site-1');
  s.abortRound(3, 'site-2 voted NO');
  s.rollbackRound(4, s.commits[1]!);
  s.commitRound(5, {
    parameters: perturbed(s.models[3]!, 5, 0.03),
    params: { ...base, bits: 4, clip: 0.5, learningRate: 0.05 },
    contributors: [
      ['site-1', 100],
      ['site-2', 200],
    ],
  });
  return s;
}

/**
 * Unsigned entries of `records` (sequences `first`, `first + 1`, …; `unixMs` = `startMs` + 1000 ·
 * sequence), as LogHistory folds them: it checks the records' rules, not signatures or links.
 */
export function unsignedEntries(
  federation: string,
  records: readonly LogRecordInput[],
  first = 1,
  startMs = 1_700_000_000_000,
): LogEntry[] {
  return records.map((input, i) => {
    const sequence = first + i;
    const record: LogRecordBody = {
      federation,
      sequence,
      previousEntry: new Uint8Array(32),
      unixMs: startMs + 1000 * sequence,
      ...input,
    };
    const bytes = new TextEncoder().encode(`entry ${sequence}`);
    return { sequence, bytes, hash: sha256(bytes), record };
  });
}
