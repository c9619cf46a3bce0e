import { describe, expect, it } from 'vitest';
import { initParameters, logisticRegression, mlp } from '../../federation/index.ts';
import { diffJson, diffLines } from '../../src/cli/commands/versions-diff-format.ts';
import { float32String, printable } from '../../src/cli/commands/versions-format.ts';
import { logLines } from '../../src/cli/commands/versions-log.ts';
import { rollbackOutcomeLine } from '../../src/cli/commands/versions-rollback.ts';
import { showLines } from '../../src/cli/commands/versions-show.ts';
import { parseConfig } from '../../src/config/index.ts';
import { CohortError, InvalidArgumentError } from '../../src/errors/index.ts';
import {
  diffCommits,
  exportMetadata,
  FederationTimeline,
  findRollbackOutcome,
  HistoryError,
  layerDiffStats,
  logItems,
  logJson,
  resolveRef,
  showJson,
  waitForRollbackOutcome,
} from '../../src/history/index.ts';
import { encodeRoundParams } from '../../src/round/index.ts';
import { bytesToHex, type Commit, genesisCommit } from '../../src/versions/index.ts';
import { cohort } from '../helpers/run-cli.ts';
import { HistoryScript, perturbed, unsignedEntries, versionsScenario } from '../helpers/versions-history.ts';

const FED = 'unit';
const SPEC = mlp(6, [4], 3);
const G0 = initParameters(SPEC, 7);
const GENESIS = {
  commit: genesisCommit(
    G0,
    encodeRoundParams({ round: 0, bits: 8, clip: 1, strategy: 'fedavg', learningRate: 0.1 }),
  ),
  parameters: G0,
};

/** The scenario folded into a timeline, and the script that built it. */
function scenario(): { script: HistoryScript; timeline: FederationTimeline } {
  const script = versionsScenario(FED, GENESIS);
  const timeline = new FederationTimeline(GENESIS.commit);
  for (const entry of unsignedEntries(FED, script.records)) timeline.apply(entry);
  return { script, timeline };
}

const hex = (c: Commit) => bytesToHex(c.hash);

function refError(fn: () => unknown): HistoryError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(HistoryError);
    return err as HistoryError;
  }
  throw new Error('expected a HistoryError');
}

describe('FederationTimeline', () => {
  it('folds the scenario: 5 commits, 5 decided rounds with their opens, one snapshot', () => {
    const { script, timeline } = scenario();
    expect(timeline.head.commit.hash).toEqual(script.head.hash);
    expect(timeline.commits().map((c) => c.commit.kind)).toEqual([
      'genesis',
      'round',
      'round',
      'rollback',
      'round',
    ]);
    expect(timeline.rounds.map((r) => [r.round, r.decision.commit])).toEqual([
      [1, true],
      [2, true],
      [3, false],
      [4, true],
      [5, true],
    ]);
    for (const r of timeline.rounds) {
      expect(r.open.round).toBe(r.round);
      expect(r.openSequence).toBe(r.sequence - 1);
    }
    expect(timeline.snapshotsOf(script.commits[2]!.hash)).toHaveLength(1);
    expect(timeline.snapshotsOf(script.commits[1]!.hash)).toHaveLength(0);
    expect(timeline.position.sequence).toBe(script.records.length);
  });

  it('records nothing of an entry that breaks the rules', () => {
    const { script, timeline } = scenario();
    const extra = new HistoryScript(FED, GENESIS); // based on genesis, not on the head
    extra.commitRound(6, {
      parameters: G0,
      params: { strategy: 'fedavg', bits: 8, clip: 1, learningRate: 0.1 },
      contributors: [],
    });
    const [open] = unsignedEntries(FED, extra.records, script.records.length + 1);
    expect(() => timeline.apply(open!)).toThrow(expect.objectContaining({ code: 'LOG_HISTORY_INVALID' }));
    expect(timeline.rounds).toHaveLength(5);
  });
});

describe('resolveRef', () => {
  const { script, timeline } = scenario();
  const h = timeline.history;
  const at = (ref: string) => resolveRef(h, ref).commit.height;

  it('resolves HEAD, HEAD~n and @height', () => {
    expect(at('HEAD')).toBe(4);
    expect(at('HEAD~0')).toBe(4);
    expect(at('HEAD~1')).toBe(3);
    expect(at('HEAD~4')).toBe(0);
    expect(at('@0')).toBe(0);
    expect(at('@2')).toBe(2);
    expect(at('@4')).toBe(4);
  });

  it('resolves whole hashes and unique prefixes of 4+ digits, in either case', () => {
    for (const c of script.commits) {
      expect(resolveRef(h, hex(c)).commit.hash).toEqual(c.hash);
      expect(resolveRef(h, hex(c).slice(0, 12)).commit.hash).toEqual(c.hash);
      expect(resolveRef(h, hex(c).slice(0, 12).toUpperCase()).commit.hash).toEqual(c.hash);
    }
  });

  it('refuses refs beyond the chain as REF_UNKNOWN naming the ref', () => {
    for (const ref of ['HEAD~5', '@5', '@99999999999999999999']) {
      const err = refError(() => resolveRef(h, ref));
      expect(err.code).toBe('REF_UNKNOWN');
      expect(err.message).toContain(JSON.stringify(ref));
      expect(err.message).toContain('heights 0 to 4');
    }
    const hashes = script.commits.map(hex);
    let absent = 'ffff';
    for (let i = 0; hashes.some((x) => x.startsWith(absent)); i++) absent = i.toString(16).padStart(4, '0');
    const err = refError(() => resolveRef(h, absent));
    expect(err.code).toBe('REF_UNKNOWN');
    expect(err.details['ref']).toBe(absent);
    // An ABORTed round has no commit; a hash of another chain is not on this one.
    expect(refError(() => resolveRef(h, bytesToHex(new Uint8Array(32).fill(7)))).code).toBe('REF_UNKNOWN');
  });

  it('refuses malformed refs as REF_INVALID', () => {
    for (const ref of ['', 'abc', 'HEAD~', 'HEAD~-1', 'head', '@', '@x', 'zzzz', 'a'.repeat(65), 'HEAD^']) {
      const err = refError(() => resolveRef(h, ref));
      expect(err.code, ref).toBe('REF_INVALID');
      expect(err.message).toContain(JSON.stringify(ref));
    }
  });

  it('refuses an ambiguous prefix as REF_AMBIGUOUS listing the candidates', () => {
    // Search for a round whose commit on @1 shares @1's first four hex digits (about 65536 tries).
    const s = new HistoryScript(FED, GENESIS);
    const params = { strategy: 'fedavg', bits: 8, clip: 1, learningRate: 0.1 };
    const c1 = s.commitRound(1, { parameters: G0, params, contributors: [['site-1', 1]] }).commit;
    const p2 = perturbed(G0, 2, 0.01);
    let round = 2;
    while (!hex(s.nextRoundCommit(round, { parameters: p2, params })).startsWith(hex(c1).slice(0, 4)))
      round++;
    const c2 = s.commitRound(round, { parameters: p2, params, contributors: [['site-1', 1]] }).commit;
    const t = new FederationTimeline(GENESIS.commit);
    for (const e of unsignedEntries(FED, s.records)) t.apply(e);
    const prefix = hex(c1).slice(0, 4);
    const err = refError(() => resolveRef(t.history, prefix));
    expect(err.code).toBe('REF_AMBIGUOUS');
    expect(err.message).toContain(JSON.stringify(prefix));
    expect(err.message).toContain('@1');
    expect(err.message).toContain('@2');
    expect(err.details['candidates']).toEqual([hex(c1), hex(c2)]);
    // One more digit (where they differ) resolves.
    let n = 5;
    while (hex(c1).slice(0, n) === hex(c2).slice(0, n)) n++;
    expect(resolveRef(t.history, hex(c2).slice(0, n)).commit.height).toBe(2);
  });
});

describe('diffCommits', () => {
  const { script, timeline } = scenario();
  const h = timeline.history;

  it('lists every round between, committed and aborted, with the parameter changes and rollbacks', () => {
    const d = diffCommits(timeline, h.commitAt(0)!, h.head);
    expect(d.reversed).toBe(false);
    expect(d.rounds.map((r) => [r.round, r.outcome, r.commit?.commit.height ?? null])).toEqual([
      [1, 'commit', 1],
      [2, 'commit', 2],
      [3, 'abort', null],
      [4, 'commit', 3],
      [5, 'commit', 4],
    ]);
    expect(d.rounds[0]!.decision.aggregate!.contributors.map((c) => c.site)).toEqual([
      'site-1',
      'site-2',
      'site-3',
    ]);
    expect(d.rounds[2]!.decision.reason).toBe('site-2 voted NO');
    expect(d.rounds[3]!.rollbackTarget?.commit.height).toBe(1);
    expect(d.paramChanges.map((p) => [p.at.commit.height, p.param, p.before, p.after])).toEqual([
      [2, 'clip', 1, 0.5],
      [2, 'learningRate', 0.1, 0.05],
      [3, 'clip', 0.5, 1],
      [3, 'learningRate', 0.05, 0.1],
      [4, 'bits', 8, 4],
      [4, 'clip', 1, 0.5],
      [4, 'learningRate', 0.1, 0.05],
    ]);
    expect(d.rollbacks.map((r) => [r.commit.commit.height, r.target.commit.height])).toEqual([[3, 1]]);
    expect(d.paramsFrom).toEqual({ round: 0, bits: 8, clip: 1, strategy: 'fedavg', learningRate: 0.1 });
    expect(d.paramsTo).toEqual({ round: 5, bits: 4, clip: 0.5, strategy: 'fedavg', learningRate: 0.05 });
  });

  it('orders the two commits and spans only the rounds between them', () => {
    const d = diffCommits(timeline, h.head, h.commitAt(2)!);
    expect(d.reversed).toBe(true);
    expect(d.from.commit.height).toBe(2);
    expect(d.to.commit.height).toBe(4);
    expect(d.rounds.map((r) => r.round)).toEqual([3, 4, 5]);
    const same = diffCommits(timeline, h.commitAt(1)!, h.commitAt(1)!);
    expect(same.rounds).toEqual([]);
    expect(same.paramChanges).toEqual([]);
  });

  it('refuses a commit that is not on the chain', () => {
    const other = { ...h.commitAt(1)!, commit: { ...script.commits[1]!, hash: new Uint8Array(32) } };
    expect(() => diffCommits(timeline, other, h.head)).toThrow(InvalidArgumentError);
  });
});

describe('layerDiffStats', () => {
  it('computes ‖Δ‖, max|Δ| and both norms per W and b', () => {
    const spec = mlp(2, [2], 2);
    const from = new Float32Array(12);
    const to = new Float32Array([3, 4, 0, 0, 1, 0, 0, 0, 0, -2, 0, 0]);
    from[4] = 1; // b0 = [1, 0] on both sides: no difference there
    from[9] = 2; // W1[1][1] 2 → −2
    const [l0, l1] = layerDiffStats(spec, from, to);
    expect(l0!.weight).toEqual({
      name: 'layers.0.weight',
      count: 4,
      l2Diff: 5,
      maxAbsDiff: 4,
      l2From: 0,
      l2To: 5,
    });
    expect(l0!.bias).toEqual({
      name: 'layers.0.bias',
      count: 2,
      l2Diff: 0,
      maxAbsDiff: 0,
      l2From: 1,
      l2To: 1,
    });
    expect(l1!.weight).toEqual({
      name: 'layers.2.weight',
      count: 4,
      l2Diff: 4,
      maxAbsDiff: 4,
      l2From: 2,
      l2To: 2,
    });
    expect(l1!.bias.l2Diff).toBe(0);
    expect([l0!.inputs, l0!.outputs, l1!.layer, l1!.layerIndex]).toEqual([2, 2, 1, 2]);
    expect([l1!.kind, l1!.weightShape]).toEqual(['dense', [2, 2]]);
  });

  it('agrees with a direct computation on the scenario models', () => {
    const { script } = scenario();
    const a = script.models[1]!;
    const b = script.models[4]!;
    const stats = layerDiffStats(SPEC, a, b);
    expect(stats).toHaveLength(2);
    // Layer 1's weight: 3 × 4 values after layer 0 (6 × 4 + 4).
    const off = 6 * 4 + 4;
    let d2 = 0;
    let max = 0;
    for (let i = off; i < off + 12; i++) {
      d2 += (b[i]! - a[i]!) ** 2;
      max = Math.max(max, Math.abs(b[i]! - a[i]!));
    }
    expect(stats[1]!.weight.l2Diff).toBeCloseTo(Math.sqrt(d2), 12);
    expect(stats[1]!.weight.maxAbsDiff).toBe(max);
  });

  it('refuses vectors of another length, naming them', () => {
    expect(() => layerDiffStats(SPEC, G0, new Float32Array(3))).toThrow(/to must be a Float32Array of 43/);
    expect(() => layerDiffStats(SPEC, [] as unknown as Float32Array, G0)).toThrow(/from must be/);
  });
});

describe('rollback outcome', () => {
  it('finds the decision naming the target after the request, COMMIT or ABORT', () => {
    const { script, timeline } = scenario();
    expect(findRollbackOutcome(timeline, script.commits[1]!.hash, 0)).toMatchObject({ outcome: 'commit' });
    const seq = timeline.position.sequence;
    expect(findRollbackOutcome(timeline, script.commits[1]!.hash, seq)).toBeUndefined();
    const records = script.abortRound(6, 'site-1 voted NO: \u001b[31mred', script.commits[2]);
    for (const e of unsignedEntries(FED, records, seq + 1)) timeline.apply(e);
    const abort = findRollbackOutcome(timeline, script.commits[2]!.hash, seq)!;
    expect(abort.outcome).toBe('abort');
    expect(rollbackOutcomeLine(abort)).toBe('ABORT round 6: site-1 voted NO: ?[31mred');
  });

  it('polls until the decision appears, with an injected clock', async () => {
    const { script, timeline } = scenario();
    const after = timeline.position.sequence;
    const { records, commit } = script.rollbackRound(6, script.commits[2]!);
    let t = 0;
    let syncs = 0;
    const sleeps: number[] = [];
    const outcome = await waitForRollbackOutcome({
      timeline,
      target: script.commits[2]!.hash,
      after,
      timeoutMs: 10_000,
      now: () => t,
      sleep: async (ms) => {
        sleeps.push(ms);
        t += ms;
      },
      sync: async () => {
        if (++syncs === 3) for (const e of unsignedEntries(FED, records, after + 1)) timeline.apply(e);
      },
    });
    expect(outcome?.outcome).toBe('commit');
    expect(sleeps).toEqual([500, 500]);
    expect(rollbackOutcomeLine(outcome!)).toBe(`COMMIT ${hex(commit)} height 5 (round 6)`);
  });

  it('gives up after the timeout', async () => {
    const { script, timeline } = scenario();
    let t = 0;
    const sleeps: number[] = [];
    const outcome = await waitForRollbackOutcome({
      timeline,
      target: script.commits[2]!.hash,
      after: timeline.position.sequence,
      timeoutMs: 1200,
      now: () => t,
      sleep: async (ms) => {
        sleeps.push(ms);
        t += ms;
      },
      sync: async () => 0,
    });
    expect(outcome).toBeUndefined();
    expect(sleeps).toEqual([500, 500, 200]);
  });
});

const COMMIT_KEYS = [
  'aggregateDigest',
  'contributors',
  'hash',
  'height',
  'kind',
  'missing',
  'modelHash',
  'parent',
  'rollbackTarget',
  'rollbackTargetHeight',
  'round',
  'sequence',
  'stateHash',
  'unixMs',
  'voters',
];

describe('versions log formatting', () => {
  const { script, timeline } = scenario();

  it('prints commits newest first in the documented JSON shape', () => {
    const json = logJson(timeline, logItems(timeline));
    expect(json.map((j) => j.kind)).toEqual(['round', 'rollback', 'round', 'round', 'genesis']);
    for (const j of json) expect(Object.keys(j).sort()).toEqual(COMMIT_KEYS);
    const [c4, c3, c2, c1, c0] = json as Extract<(typeof json)[number], { hash: string }>[];
    expect(c4).toMatchObject({
      hash: hex(script.commits[4]!),
      height: 4,
      round: 5,
      parent: hex(script.commits[3]!),
    });
    expect(c1!.contributors).toEqual([
      { site: 'site-1', digest: expect.stringMatching(/^[0-9a-f]{64}$/), weight: 100 },
      { site: 'site-2', digest: expect.stringMatching(/^[0-9a-f]{64}$/), weight: 200 },
      { site: 'site-3', digest: expect.stringMatching(/^[0-9a-f]{64}$/), weight: 300 },
    ]);
    expect(c2).toMatchObject({ voters: ['site-1', 'site-2'], missing: ['site-3'], rollbackTarget: null });
    expect(c3).toMatchObject({
      kind: 'rollback',
      contributors: [],
      rollbackTarget: hex(script.commits[1]!),
      rollbackTargetHeight: 1,
      modelHash: bytesToHex(script.commits[1]!.modelHash),
      aggregateDigest: '0'.repeat(64),
    });
    expect(c0).toMatchObject({ kind: 'genesis', sequence: null, unixMs: null, stateHash: null, voters: [] });
    expect(c4!.sequence).toBe(script.records.length);
    expect(c4!.unixMs).toBe(1_700_000_000_000 + 1000 * script.records.length);
    expect(JSON.parse(JSON.stringify(json))).toEqual(json);
  });

  it('adds ABORTed rounds with --all and keeps the newest n with --limit', () => {
    const all = logJson(timeline, logItems(timeline, { all: true }));
    expect(all.map((j) => j.kind)).toEqual(['round', 'rollback', 'abort', 'round', 'round', 'genesis']);
    expect(Object.keys(all[2]!).sort()).toEqual([
      'height',
      'kind',
      'missing',
      'parent',
      'reason',
      'rollbackTarget',
      'round',
      'sequence',
      'unixMs',
      'voters',
    ]);
    expect(all[2]).toMatchObject({
      kind: 'abort',
      round: 3,
      reason: 'site-2 voted NO',
      height: 2,
      rollbackTarget: null,
    });
    expect(logItems(timeline, { all: true, limit: 3 }).map((i) => i.type)).toEqual([
      'commit',
      'commit',
      'abort',
    ]);
    expect(logItems(timeline, { limit: 1 })).toHaveLength(1);
  });

  it('prints aligned lines: height, round, kind, short hash, date, detail', () => {
    const lines = logLines(timeline, logItems(timeline, { all: true }));
    expect(lines).toHaveLength(6);
    const date = (seq: number) => new Date(1_700_000_000_000 + 1000 * seq).toISOString();
    const seqOf = (h: number) => timeline.history.commitAt(h)!.sequence;
    expect(lines[0]).toBe(
      `@4  round 5  round     ${hex(script.commits[4]!).slice(0, 12)}  ${date(seqOf(4))}  2 contributors`,
    );
    expect(lines[1]).toBe(
      `@3  round 4  rollback  ${hex(script.commits[3]!).slice(0, 12)}  ${date(seqOf(3))}  to @1 ${hex(script.commits[1]!).slice(0, 12)}`,
    );
    expect(lines[2]).toMatch(/^- {3}round 3 {2}ABORT {5}- {13}\S+ {2}site-2 voted NO$/);
    expect(lines[5]).toBe(`@0  round 0  genesis   ${hex(script.commits[0]!).slice(0, 12)}  -`);
  });

  it('prints float32 values by their shortest decimal', () => {
    expect(float32String(Math.fround(0.05))).toBe('0.05');
    expect(float32String(Math.fround(1 / 3))).toBe('0.33333334');
    expect(float32String(4)).toBe('4');
  });

  it('makes member-supplied text printable', () => {
    expect(printable('a\u001b[2Jb\nc\u0085')).toBe('a?[2Jb?c?');
  });
});

describe('versions show formatting', () => {
  /** A `label: value` line: labels padded to the longest, 'aggregate digest:'. */
  const row = (label: string, value: string) => `${label.padEnd(17)}  ${value}`;
  const { script, timeline } = scenario();

  it('adds the decoded params, aggregate, exclusions, next clip and snapshots', () => {
    const j = showJson(timeline, timeline.history.commitAt(2)!);
    expect(Object.keys(j).sort()).toEqual(
      [
        ...COMMIT_KEYS,
        'aggregate',
        'evaluation',
        'exclusions',
        'nextClip',
        'params',
        'paramsHex',
        'snapshots',
        'statistics',
      ].sort(),
    );
    expect(j.evaluation).toBeNull();
    expect(j.statistics).toBeNull();
    expect(j.params).toEqual({ round: 2, bits: 8, clip: 0.5, strategy: 'fedavg', learningRate: 0.05 });
    expect(j.paramsHex).toBe(bytesToHex(script.commits[2]!.params));
    expect(j.aggregate).toEqual({
      object: 'round-2',
      objectBytes: 1002,
      totalWeight: 300,
      participants: 2,
      totalExamples: 600,
    });
    expect(j.exclusions).toEqual([
      { site: 'site-3', strikes: 1, sinceRound: 2, atHeight: 1, excluded: true },
    ]);
    expect(j.nextClip).toBe(0.25);
    expect(j.snapshots).toEqual([
      {
        sequence: 5,
        unixMs: 1_700_000_005_000,
        object: 'snapshot-2',
        digest: expect.stringMatching(/^[0-9a-f]{64}$/),
        bytes: 4002,
        site: 'site-1',
      },
    ]);
    const lines = showLines(j);
    expect(lines[0]).toBe(row('commit', hex(script.commits[2]!)));
    expect(lines).toContain(row('params:', 'bits 8, clip 0.5, strategy fedavg, learning rate 0.05'));
    expect(lines).toContain(row('missing:', 'site-3'));
    expect(lines).toContain(row('next clip:', '0.25'));
    expect(lines).toContain(row('', 'site-3  excluded, 1 strike, last in round 2, at height 1'));
    expect(lines.some((l) => l.includes('snapshot-2, 4002 bytes'))).toBe(true);
  });

  it('shows genesis and rollbacks without decision fields', () => {
    const g = showJson(timeline, timeline.history.commitAt(0)!);
    expect(g).toMatchObject({
      kind: 'genesis',
      aggregate: null,
      exclusions: [],
      nextClip: null,
      snapshots: [],
    });
    expect(g.params).toEqual({ round: 0, bits: 8, clip: 1, strategy: 'fedavg', learningRate: 0.1 });
    const r = showJson(timeline, timeline.history.commitAt(3)!);
    expect(r).toMatchObject({ kind: 'rollback', aggregate: null, rollbackTargetHeight: 1 });
    expect(showLines(r)).toContain(row('rollback target:', `${hex(script.commits[1]!)} (@1)`));
  });
});

describe('versions diff and export formatting', () => {
  const { timeline } = scenario();

  it('prints the documented JSON shape', () => {
    const d = diffCommits(timeline, timeline.history.commitAt(1)!, timeline.head);
    const j = diffJson(d, null, null);
    expect(Object.keys(j).sort()).toEqual([
      'from',
      'layers',
      'paramChanges',
      'params',
      'reversed',
      'rollbacks',
      'rounds',
      'store',
      'to',
    ]);
    expect(j.from).toEqual({ hash: expect.any(String), height: 1, round: 1, kind: 'round' });
    expect(j.rounds.map((r) => [r.round, r.outcome, r.kind, r.height])).toEqual([
      [2, 'commit', 'round', 2],
      [3, 'abort', null, 2],
      [4, 'commit', 'rollback', 3],
      [5, 'commit', 'round', 4],
    ]);
    expect(Object.keys(j.rounds[1]!).sort()).toEqual([
      'contributors',
      'hash',
      'height',
      'kind',
      'missing',
      'outcome',
      'reason',
      'rollbackTarget',
      'rollbackTargetHeight',
      'round',
      'sequence',
      'unixMs',
      'voters',
    ]);
    expect(j.rollbacks).toEqual([
      { hash: expect.any(String), height: 3, round: 4, target: j.from.hash, targetHeight: 1 },
    ]);
    expect(j.paramChanges[0]).toEqual({
      param: 'clip',
      before: 1,
      after: 0.5,
      hash: expect.any(String),
      height: 2,
      round: 2,
    });
    const lines = diffLines(d, null, null);
    expect(lines[0]).toMatch(/^diff @1 [0-9a-f]{12} \(round 1\) → @4 [0-9a-f]{12} \(round 5\)$/);
    expect(lines[1]).toBe('rounds: 4 (3 committed, 1 aborted)');
    expect(lines.some((l) => /round 3 {2}ABORT .*site-2 voted NO$/.test(l))).toBe(true);
    expect(lines.some((l) => /round 4 {2}COMMIT {2}@3 .*rollback to @1$/.test(l))).toBe(true);
    const c2 = bytesToHex(timeline.history.commitAt(2)!.commit.hash).slice(0, 12);
    expect(lines).toContain(`  learning rate 0.1 → 0.05 at @2 ${c2} (round 2)`);
    expect(lines).toContain('params: 7 changes');
    expect(lines.filter((l) => l.startsWith('rollbacks: '))).toEqual(['rollbacks: 1']);
  });

  it('names the commit, federation and model in the safetensors metadata', () => {
    const config = parseConfig({ federation: { id: 'meta' }, learning: { model: 'logreg' } });
    const c = timeline.history.commitAt(2)!;
    expect(exportMetadata(config, logisticRegression(784, 10), c)).toEqual({
      format: 'pt',
      cohort_commit: bytesToHex(c.commit.hash),
      cohort_height: '2',
      cohort_round: '2',
      cohort_federation: 'meta',
      cohort_model: 'logreg',
      cohort_input: '[784]',
      cohort_layers: '[{"type":"dense","units":10}]',
    });
  });
});

describe('cohort versions usage', () => {
  it('exits 2 for usage errors, before any connection', async () => {
    const unknown = await cohort('versions', 'bogus');
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain("unknown command 'bogus'");
    const missing = await cohort('versions', 'show', 'HEAD');
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('--config');
    const format = await cohort(
      'versions',
      'export',
      'HEAD',
      '-c',
      'x.yaml',
      '-m',
      'site-1',
      '--out',
      'x',
      '--format',
      'onnx',
    );
    expect(format.status).toBe(2);
    expect(format.stderr).toContain(
      'error [INVALID_ARGUMENT]: --format onnx is not supported (supported: safetensors)',
    );
    const limit = await cohort('versions', 'log', '-c', 'x.yaml', '-m', 'site-1', '--limit', '0');
    expect(limit.status).toBe(2);
    expect(limit.stderr).toContain('--limit 0 must be an integer ≥ 1');
    expect((await cohort('versions', '--help')).status).toBe(0);
  });

  it('history errors are Cohort errors (exit 2)', () => {
    expect(new HistoryError('REF_UNKNOWN', 'x')).toBeInstanceOf(CohortError);
  });
});
