import { INTEGER_RDP_ORDERS, rdpToEpsilon } from '../../federation/privacy/index.ts';
import type { DecisionBody } from '../protocol/index.ts';
import { decodeRoundParams, type RoundPrivacy } from '../round/index.ts';
import type { AuditProblem } from './audit-report.ts';

/**
 * The privacy records of a log's round commits, checked in log order (docs/privacy.md): each names
 * the decision's contributor count, the same mechanism (noise multiplier, clip, noise shares) and δ
 * as the first, more RDP at every order than the one before (every round spends) and no less δ
 * cost, and the ε its own RDP gives. A coordinator that under-reports or resets what the federation spent shows here.
 * Rounds whose charge the auditor would need the model's size for are not recomputed.
 */
export class PrivacyTrail {
  #last: RoundPrivacy | null = null;
  /** Round commits whose privacy record was checked. */
  checked = 0;

  /** Checks the decision of a committed training round; returns a problem or null. */
  check(sequence: number, d: DecisionBody): AuditProblem | null {
    let recorded: RoundPrivacy | null;
    try {
      recorded = decodeRoundParams(d.params).privacy ?? null;
    } catch {
      return null; // params that are not round params: not a privacy question
    }
    const problem = (message: string): AuditProblem => ({
      sequence,
      code: 'PRIVACY_RECORD_INVALID',
      message: `round ${d.round}: ${message}`,
    });
    const last = this.#last;
    if (recorded === null) {
      return last === null ? null : problem('records no privacy after rounds that did');
    }
    this.checked++;
    this.#last = recorded;
    const contributors = d.aggregate?.contributors.length;
    if (contributors !== undefined && recorded.contributors !== contributors) {
      return problem(`records ${recorded.contributors} contributors, the decision lists ${contributors}`);
    }
    if (recorded.rdp.length !== INTEGER_RDP_ORDERS.length) {
      return problem(
        `records RDP at ${recorded.rdp.length} orders, the accountant uses ${INTEGER_RDP_ORDERS.length}`,
      );
    }
    if (last !== null) {
      for (const key of ['noiseMultiplier', 'clipNorm', 'noiseShares', 'delta'] as const) {
        if (recorded[key] !== last[key])
          return problem(`${key} ${recorded[key]}, an earlier round recorded ${last[key]}`);
      }
      // Every round spends something at every order: a record that does not grow was reset.
      const stale = recorded.rdp.findIndex((r, i) => !(r > last.rdp[i]!));
      if (stale >= 0) {
        return problem(
          `RDP at order ${INTEGER_RDP_ORDERS[stale]} is ${recorded.rdp[stale]}, not more than the ${last.rdp[stale]} recorded before`,
        );
      }
      if (recorded.deltaCost < last.deltaCost) return problem('δ cost is less than recorded before');
    }
    const rest = recorded.delta - recorded.deltaCost;
    const epsilon =
      rest > 0 ? rdpToEpsilon(INTEGER_RDP_ORDERS, recorded.rdp, rest).epsilon : Number.POSITIVE_INFINITY;
    if (recorded.epsilon !== epsilon) {
      return problem(`records ε ${recorded.epsilon}, its own RDP gives ${epsilon}`);
    }
    return null;
  }
}
