// Settings and start-up shared by the fault suite's federations.
import type { CohortConfigInput } from '../../src/config/index.ts';
import {
  type Federation,
  type MemberProcess,
  recoveryOverrides,
  waitFor,
} from '../recovery/recovery-helpers.ts';

/** How long a member process may take to start (TypeScript load, SEAL, TLS) on a loaded machine. */
export const START_MS = 120_000;

/**
 * The recovery suites' fast settings ({@link recoveryOverrides}: logistic regression on 800 rows,
 * 200 ms heartbeats), with `quorum` sites awaited before each round, `deadlineMs` per round, and
 * NATS connects and requests given 10 s: on two shared cores a TLS connect can take over 3 s.
 */
export function faultOverrides(
  quorum: number,
  deadlineMs = 60_000,
  extra: Partial<CohortConfigInput> = {},
): Partial<CohortConfigInput> {
  const base = recoveryOverrides(quorum);
  return {
    ...base,
    round: { ...base.round, deadlineMs },
    nats: { timeoutMs: 10_000 },
    ...extra,
  };
}

/** Resolves once `p` is up: an agent logged `agent ready`, an aggregator `aggregator started`. */
export async function waitUp(f: Federation, p: MemberProcess): Promise<void> {
  const role = p.id.startsWith('agg-') ? 'aggregator started' : 'agent ready';
  try {
    await waitFor(`${p.id} up`, () => p.logged(role) || !p.running, START_MS);
  } catch (err) {
    console.error(f.dumpOutput());
    throw err;
  }
  if (!p.running) throw new Error(`${p.id} exited while starting:\n${p.output}`);
}

/**
 * Starts member `id` as a process and waits until it is up. On two loaded cores a TLS connect can
 * time out while several members load SEAL at once: a start that fails with TRANSPORT_CONNECT is
 * tried again (twice at most), as a supervisor would; any other failure is thrown.
 */
export async function startMember(
  f: Federation,
  role: 'agent' | 'aggregator',
  id: string,
  env: Record<string, string> = {},
): Promise<MemberProcess> {
  for (let attempt = 1; ; attempt++) {
    const p = f.spawn(role, id, [], env);
    try {
      await waitUp(f, p);
      return p;
    } catch (err) {
      if (attempt >= 3 || !p.output.includes('TRANSPORT_CONNECT')) throw err;
    }
  }
}

/** Starts `aggregators` and `sites` as processes, one after the other, each once it is up. */
export async function startMembers(
  f: Federation,
  aggregators: readonly string[],
  sites: readonly string[],
): Promise<Map<string, MemberProcess>> {
  const procs = new Map<string, MemberProcess>();
  for (const a of aggregators) procs.set(a, await startMember(f, 'aggregator', a));
  for (const s of sites) procs.set(s, await startMember(f, 'agent', s));
  return procs;
}
