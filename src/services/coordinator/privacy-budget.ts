import type { Logger } from '../../log/index.ts';
import type { RoundPrivacy } from '../../round/index.ts';
import type { LogHistory } from '../federation-log/index.ts';
import { budgetAdmits, type ServicePrivacy, spentAt } from '../privacy-plan.ts';
import type { CoordinatorEvent, CoordinatorSummary } from './events.ts';

/**
 * The coordinator's side of differential privacy (docs/privacy.md): what the federation has spent
 * as of the log's head, and the gate before each training round. Every figure is read from the
 * chain, so a restarted coordinator counts exactly what its predecessor committed.
 */
export class PrivacyBudget {
  readonly privacy: ServicePrivacy | null;
  readonly #history: () => LogHistory;
  readonly #log: Logger;
  readonly #emit: (e: CoordinatorEvent) => void;
  #spentOut = false;

  constructor(
    privacy: ServicePrivacy | null,
    history: () => LogHistory,
    log: Logger,
    emit: (e: CoordinatorEvent) => void,
  ) {
    this.privacy = privacy;
    this.#history = history;
    this.#log = log;
    this.#emit = emit;
  }

  /** What the federation has spent as of the head (null without privacy or before the first private round). */
  spent(): RoundPrivacy | null {
    if (this.privacy === null) return null;
    const history = this.#history();
    return spentAt(history.head.commit, (h) => history.commitByHash(h)?.commit);
  }

  /**
   * Whether one more training round fits the budget: a round of `round.minContributors` sites, the
   * noisiest that can commit, must stay within ε. When not, logs and emits `privacy-budget`.
   */
  admits(round: number): boolean {
    if (this.privacy === null) return true;
    const spent = this.spent();
    if (budgetAdmits(this.privacy, spent)) return true;
    this.#spentOut = true;
    const epsilon = spent?.epsilon ?? 0;
    this.#log.warn(
      { round, epsilon, budget: this.privacy.epsilon },
      'privacy budget spent: no more training rounds',
    );
    this.#emit({ type: 'privacy-budget', round, epsilon, budget: this.privacy.epsilon });
    return false;
  }

  /** The summary's privacy part (absent without privacy). */
  summary(): Pick<CoordinatorSummary, 'privacy'> {
    if (this.privacy === null) return {};
    return {
      privacy: {
        epsilon: this.spent()?.epsilon ?? 0,
        delta: this.privacy.delta,
        budgetSpent: this.#spentOut,
      },
    };
  }
}
