import type { ControlBodies } from '../../protocol/index.ts';
import type { RoundPrivacy } from '../../round/index.ts';
import type { Commit } from '../../versions/index.ts';
import { commitPrivacy, nextRoundPrivacy, servicePrivacy, spentAt } from '../privacy-plan.ts';
import type { AgentCore } from './agent-core.ts';
import { VoteNo } from './voter-error.ts';

/** What this site counts as spent at `head` (null without privacy or before the first private round). */
export function privacySpentAt(core: AgentCore, head: Commit): RoundPrivacy | null {
  if (servicePrivacy(core.ctx.config, core.spec) === null) return null;
  return spentAt(head, (hash) => (core.store.hasCommit(hash) ? core.store.readCommit(hash) : undefined));
}

function sameRecord(a: RoundPrivacy, b: RoundPrivacy): boolean {
  return (
    a.contributors === b.contributors &&
    a.noiseMultiplier === b.noiseMultiplier &&
    a.clipNorm === b.clipNorm &&
    a.noiseShares === b.noiseShares &&
    a.epsilon === b.epsilon &&
    a.delta === b.delta &&
    a.deltaCost === b.deltaCost &&
    a.rdp.length === b.rdp.length &&
    a.rdp.every((r, i) => r === b.rdp[i])
  );
}

/**
 * With differential privacy, a training round's PREPARE must record exactly what this site computes
 * the federation will have spent once the round commits: its own count on top of its head, charged
 * for the aggregate's contributors. Anything else (a coordinator that under-reports ε) is a NO.
 * Without privacy the params stay opaque to sites, as before.
 *
 * @param recorded - reads the PREPARE's privacy record (null without one); called only with privacy
 * @throws VoteNo naming both figures
 */
export function checkPrivacyRecord(
  core: AgentCore,
  head: Commit,
  p: ControlBodies['prepare'],
  recorded: () => RoundPrivacy | null,
): void {
  const privacy = servicePrivacy(core.ctx.config, core.spec);
  if (privacy === null) return;
  const expected = nextRoundPrivacy(privacy, privacySpentAt(core, head), p.contributors.length);
  const got = recorded();
  if (got === null || !sameRecord(got, expected)) {
    throw new VoteNo(
      `PREPARE records ${got === null ? 'no privacy' : `ε ${got.epsilon} after ${got.contributors} contributors`} for round ${p.round}; I count ε ${expected.epsilon} after ${expected.contributors}`,
    );
  }
}

/** ε and δ spent as of the site's head by its own count (ε 0 before the first private round); null without privacy. */
export function privacyReport(core: AgentCore): { epsilon: number; delta: number } | null {
  const head = core.store.head();
  const delta = core.ctx.config.privacy?.delta;
  if (head === null || delta === undefined) return null;
  return { epsilon: privacySpentAt(core, head)?.epsilon ?? 0, delta };
}

/** Logs what the federation has spent once this site switched to `head` (privacy only). */
export function reportPrivacy(core: AgentCore, head: Commit): void {
  const spent = commitPrivacy(head);
  if (spent === null) return;
  core.ctx.log.info(
    {
      round: head.round,
      epsilon: spent.epsilon,
      delta: spent.delta,
      budget: core.ctx.config.privacy?.epsilon,
    },
    'privacy spent',
  );
}
