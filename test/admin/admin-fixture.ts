// In-process deps for admin API tests: a coordinator stand-in that keeps runs, the open round and
// every admin action it was asked to log, over a real FederationTimeline folded from the
// `versions` scenario (test/helpers/versions-history.ts). No NATS: the real coordinator is in
// admin-coordinator.test.ts.
import { Readable } from 'node:stream';
import { initParameters, mlp } from '../../federation/index.ts';
import type { AdminDeps, AdminToken } from '../../src/admin/index.ts';
import { hashToken } from '../../src/admin/index.ts';
import { CohortError } from '../../src/errors/index.ts';
import { FederationTimeline } from '../../src/history/index.ts';
import type { AdminActionBody } from '../../src/protocol/index.ts';
import { encodeRoundParams } from '../../src/round/index.ts';
import type { CoordinatorStats, MemberStatus, RunInfo } from '../../src/services/coordinator/index.ts';
import { bytesToHex, genesisCommit } from '../../src/versions/index.ts';
import { type HistoryScript, unsignedEntries, versionsScenario } from '../helpers/versions-history.ts';

export const FED = 'adm';

/** Plain tokens of the test configuration, by scope (the API only holds their hashes). */
export const TOKEN = { admin: 'tok-admin-1', operator: 'tok-operator-1', auditor: 'tok-auditor-1' } as const;

export const TOKENS: AdminToken[] = [
  { id: 'root', sha256: hashToken(TOKEN.admin), scopes: ['admin'] },
  { id: 'ops', sha256: hashToken(TOKEN.operator), scopes: ['operator'] },
  { id: 'audit', sha256: hashToken(TOKEN.auditor), scopes: ['auditor'] },
];

const SPEC = mlp(6, [4], 3);
const G0 = initParameters(SPEC, 7);
export const GENESIS = {
  commit: genesisCommit(
    G0,
    encodeRoundParams({ round: 0, bits: 8, clip: 1, strategy: 'fedavg', learningRate: 0.1 }),
  ),
  parameters: G0,
};

/** The deps and what the stand-in recorded. */
export interface Fixture {
  readonly deps: AdminDeps;
  readonly script: HistoryScript;
  readonly timeline: FederationTimeline;
  /** Admin actions the API asked to log, in order. */
  readonly actions: AdminActionBody[];
  /** Calls the API made of the coordinator, in order (`startRun`, `abortRound 6`…). */
  readonly calls: string[];
  /** The stand-in's state, for tests to set. */
  readonly state: { phase: CoordinatorStats['phase']; round: number; registryRefusal?: CohortError };
}

/** Deps over the `versions` scenario: 5 rounds logged (4 commits, 1 ABORT), round 6 open and collecting. */
export function fixture(): Fixture {
  const script = versionsScenario(FED, GENESIS);
  const timeline = new FederationTimeline(GENESIS.commit);
  for (const entry of unsignedEntries(FED, script.records)) timeline.apply(entry);
  const actions: AdminActionBody[] = [];
  const calls: string[] = [];
  const state: Fixture['state'] = { phase: 'collecting', round: 6 };
  const runs: RunInfo[] = [];
  const head = () => timeline.head.commit;
  const members: MemberStatus[] = ['site-1', 'site-2', 'site-3'].map((id, i) => ({
    id,
    role: 'site',
    live: i < 2,
    excluded: i === 2,
    revoked: false,
    lastSeenUnixMs: 1_700_000_000_000,
    head: bytesToHex(head().hash),
    height: head().height,
    state: 'READY',
  }));
  members.push({
    id: 'agg-1',
    role: 'aggregator',
    live: true,
    excluded: false,
    revoked: false,
    lastSeenUnixMs: 1_700_000_000_000,
    head: null,
    height: null,
    state: '',
  });
  const deps: AdminDeps = {
    federation: FED,
    coordinator: {
      stats: () => ({
        phase: state.phase,
        round: state.round,
        head: bytesToHex(head().hash),
        height: head().height,
        logSequence: timeline.position.sequence,
        liveSites: ['site-1', 'site-2'],
        liveAggregators: ['agg-1'],
        excluded: ['site-3'],
        committed: 3,
        aborted: 1,
        rejected: 0,
        rejectedByReason: {},
        snapshots: 1,
        parameters: 46,
        heartbeatsExpected: 0,
        heartbeatsReceived: 0,
        breaker: {
          enabled: true,
          level: 1,
          name: 'shrink',
          share: 0.25,
          rounds: 4,
          failing: ['site-3'],
          probing: false,
          changedAtMs: 1_700_000_000_000,
          probeAtMs: null,
          transitions: 1,
        },
      }),
      members: () => members,
      runs: () => runs,
      startRun(settings, by) {
        calls.push(`startRun ${settings.rounds}`);
        const run: RunInfo = {
          id: `run-${runs.length + 1}`,
          label: settings.label ?? '',
          rounds: settings.rounds,
          untilRound: null,
          state: 'running',
          startedBy: by,
          startedUnixMs: 1_700_000_100_000,
          stoppedBy: null,
          endedUnixMs: null,
          decided: 0,
          committed: 0,
          aborted: 0,
          summaries: [],
        };
        runs.push(run);
        return run;
      },
      stopRun(id, by) {
        calls.push(`stopRun ${id}`);
        const i = runs.findIndex((r) => r.id === id);
        runs[i] = { ...runs[i]!, state: 'stopping', stoppedBy: by };
        return runs[i]!;
      },
      abortRound(round, reason) {
        calls.push(`abortRound ${round} ${reason}`);
      },
      async queueRollback(target) {
        calls.push(`rollback ${bytesToHex(target).slice(0, 12)}`);
      },
      submitRegistryChange() {
        if (state.registryRefusal !== undefined) throw state.registryRefusal;
        calls.push('registry');
        return { kind: 'revoke', member: 'site-3', fromRound: 7 };
      },
      async appendAdminAction(action) {
        actions.push(action);
        return 100 + actions.length;
      },
    },
    history: {
      timeline: async () => timeline,
      entryTime: async (sequence) => 1_700_000_000_000 + 1000 * sequence,
    },
    exportModel: async (commit) => ({
      contentType: 'application/octet-stream',
      fileName: `model-${commit.commit.height}.safetensors`,
      bytes: new TextEncoder().encode(`model ${commit.commit.height}`),
    }),
    exportAuditBundle: async ({ contributions }) => {
      calls.push(`bundle contributions=${contributions}`);
      return {
        contentType: 'application/json',
        fileName: 'audit.json',
        body: Readable.from([Buffer.from('{"bundle":true}')]),
      };
    },
    metrics: { contentType: 'text/plain; version=0.0.4', text: async () => 'cohort_up 1\n' },
    now: () => 1_700_000_200_000,
  };
  // Round 6 is open in the log too (it must be, for the rounds routes to show it).
  for (const entry of unsignedEntries(FED, [script.open(6)], script.records.length)) timeline.apply(entry);
  return { deps, script, timeline, actions, calls, state };
}

/** `Authorization` header of a scope's token. */
export function auth(scope: keyof typeof TOKEN): Record<string, string> {
  return { authorization: `Bearer ${TOKEN[scope]}` };
}

/** A CohortError the stand-in throws (registry refusals). */
export function refusal(code: string, message: string): CohortError {
  return new CohortError(code, message);
}
