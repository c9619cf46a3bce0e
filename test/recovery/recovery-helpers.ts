// Shared setup of the crash-recovery suites: a small federation (logistic regression on a few
// hundred MNIST rows, so rounds take about a second) whose members run as `cohort` processes.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CohortConfigInput } from '../../src/config/index.ts';
import { Federation, hex, type MemberProcess, waitFor } from '../helpers/federation.ts';

/** Timing and learning settings of the recovery federations (`round.quorum` set per suite). */
export function recoveryOverrides(
  quorum: number,
  extra: Partial<CohortConfigInput> = {},
): Partial<CohortConfigInput> {
  return {
    round: {
      heartbeatMs: 200,
      missedHeartbeats: 10,
      // Far beyond every wait below: a test that finishes did not wait for a deadline.
      deadlineMs: 60_000,
      voteTimeoutMs: 8000,
      quorum,
      // These tests kill sites mid-round: a round of the two left must still commit here.
      minContributors: 2,
    },
    learning: { model: 'logreg', trainLimit: 800, testLimit: 200, epochs: 1, batchSize: 20 },
    history: { leaseMs: 1500, snapshotEvery: 2, decisionTimeoutMs: 3000 },
    log: { level: 'info' },
    ...extra,
  };
}

/** Waits until `p` printed a (non-JSON) line matching `re`; returns it. */
export async function waitLine(f: Federation, p: MemberProcess, re: RegExp, ms = 60_000): Promise<string> {
  try {
    await waitFor(`${p.id} to print ${re}`, () => p.lines.some((l) => re.test(l)), ms);
  } catch (err) {
    console.error(f.dumpOutput());
    throw err;
  }
  return p.lines.find((l) => re.test(l))!;
}

/** Waits until `p` exited; returns its code and signal. */
export async function waitExit(
  p: MemberProcess,
  ms = 60_000,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  let result: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  void p.exited.then((r) => {
    result = r;
  });
  await waitFor(`${p.id} to exit`, () => result !== undefined, ms);
  return result!;
}

/** Waits until every site in `sites` has `hash` as the head of its store on disk. */
export async function waitAllAt(
  f: Federation,
  sites: readonly string[],
  hash: string,
  ms = 30_000,
): Promise<void> {
  try {
    await waitFor(
      `${sites.join(', ')} at ${hash.slice(0, 12)}`,
      () => sites.every((s) => f.storeHead(s)?.hash === hash),
      ms,
    );
  } catch (err) {
    console.error(sites.map((s) => `${s}: ${JSON.stringify(f.storeHead(s))}`).join('\n'));
    console.error(f.dumpOutput());
    throw err;
  }
}

/** A site's residual file and pending residuals (`undefined` when absent). */
export function residualFiles(
  f: Federation,
  site: string,
): { residual: string | undefined; pending: string[] } {
  const dir = join(f.dep.config.paths.dataDir, site);
  const path = join(dir, 'residual.f32');
  const pending = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].filter((r) =>
    existsSync(join(dir, `pending-residual-${r}.f32`)),
  );
  return {
    residual: existsSync(path) ? hex(new Uint8Array(readFileSync(path))) : undefined,
    pending: pending.map(String),
  };
}

export { Federation, hex, type MemberProcess, waitFor };
