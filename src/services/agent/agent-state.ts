import { CohortError, InvalidArgumentError } from '../../errors/index.ts';

/** The site agent's lifecycle states. */
export const AGENT_STATES = [
  'IDLE',
  'LOADING',
  'READY',
  'TRAINING',
  'UPLOADING',
  'PREPARED',
  'ERROR',
  'RECOVERING',
] as const;

export type AgentState = (typeof AGENT_STATES)[number];

/**
 * Every legal edge, `from → [to…]`. Anything not listed — self-loops included — is refused.
 * Derived from the round in docs/round-protocol.md:
 *
 * - `IDLE → LOADING`: the agent starts: opens its store (local model versions, residuals, keys)
 *   and pulls commits after its head (catch-up).
 * - `LOADING → READY`: at the federation's head, keys loaded; can take a round.
 * - `LOADING → RECOVERING`: keys, data and store are loaded; the federation log is read, and a
 *   candidate written as *prepared* with no decision applied (the agent crashed between PREPARE
 *   and COMMIT/ABORT) is settled by the decision the log holds.
 * - `READY → TRAINING`: a `RoundOpen` names this site and the base commit equals the head.
 * - `READY → LOADING`: the `RoundOpen` names a base commit ahead of the head, or the agent was
 *   dropped from a round's view and catches up by replay.
 * - `READY → PREPARED`: a `PREPARE` arrived; the aggregate was fetched, verified, decrypted,
 *   applied and the candidate written durably; the agent votes YES. PREPARE goes to every live
 *   member, contributors and non-contributors alike, so it is always handled from READY. A NO vote
 *   (bad signature, lane overflow) writes nothing and leaves the agent in READY awaiting ABORT.
 * - `TRAINING → UPLOADING`: local epochs done, update quantized (residual persisted), packed,
 *   encrypted; blocks and manifest are being sent.
 * - `TRAINING → READY`: the round was cancelled, its deadline passed, or PREPARE arrived first
 *   (this site is a straggler and is left out); the update is discarded.
 * - `UPLOADING → READY`: the manifest was acknowledged and the agent waits for PREPARE, or the
 *   upload was abandoned (deadline, PREPARE already here). There is deliberately no
 *   `UPLOADING → PREPARED`: waiting for PREPARE is READY, so PREPARED has one entry from normal
 *   operation and an upload can never be mistaken for a vote.
 * - `PREPARED → READY`: `COMMIT` (atomic pointer swap to the candidate) or `ABORT` (candidate
 *   discarded).
 * - `PREPARED → RECOVERING`: no decision arrived within the decision timeout; read it from the log.
 * - `ERROR → RECOVERING`: the only way out of ERROR: recovery decides what is still valid.
 * - `RECOVERING → READY`: the log's decision was applied (or there was nothing to finish) and
 *   the agent is at the head.
 * - `RECOVERING → LOADING`: commits exist after the head (missed rounds, or the local model
 *   must be rebuilt from a snapshot): pull. At start the agent always passes here once.
 * - `RECOVERING → PREPARED`: the log holds no decision yet for the prepared candidate; keep it
 *   and wait for COMMIT/ABORT.
 * - `* → ERROR` from every state but ERROR: any failure (store, engine, network, crypto) that
 *   the current step cannot absorb. A failure while in ERROR keeps ERROR.
 */
export const AGENT_TRANSITIONS: Readonly<Record<AgentState, readonly AgentState[]>> = Object.freeze({
  IDLE: Object.freeze(['LOADING', 'ERROR'] as const),
  LOADING: Object.freeze(['READY', 'RECOVERING', 'ERROR'] as const),
  READY: Object.freeze(['TRAINING', 'LOADING', 'PREPARED', 'ERROR'] as const),
  TRAINING: Object.freeze(['UPLOADING', 'READY', 'ERROR'] as const),
  UPLOADING: Object.freeze(['READY', 'ERROR'] as const),
  PREPARED: Object.freeze(['READY', 'RECOVERING', 'ERROR'] as const),
  ERROR: Object.freeze(['RECOVERING'] as const),
  RECOVERING: Object.freeze(['READY', 'LOADING', 'PREPARED', 'ERROR'] as const),
});

/** True when `from → to` is an edge of {@link AGENT_TRANSITIONS}. */
export function isLegalTransition(from: AgentState, to: AgentState): boolean {
  return AGENT_TRANSITIONS[from].includes(to);
}

/** True when `value` is one of {@link AGENT_STATES}. */
export function isAgentState(value: unknown): value is AgentState {
  return typeof value === 'string' && (AGENT_STATES as readonly string[]).includes(value);
}

/** Stable codes of {@link AgentStateError}; never renamed once released. */
export const AGENT_STATE_ERROR_CODES = [
  /** `from → to` is not an edge of the transition table; the state is unchanged. */
  'ILLEGAL_TRANSITION',
  /** `transition` was called from inside a change listener; the state is unchanged. */
  'REENTRANT_TRANSITION',
  /** A change listener threw; the transition itself stands and every listener ran. */
  'LISTENER_FAILED',
] as const;

export type AgentStateErrorCode = (typeof AGENT_STATE_ERROR_CODES)[number];

/** The agent state machine refused a call; `details` holds `from`, `to` and `reason`. */
export class AgentStateError extends CohortError {
  declare readonly code: AgentStateErrorCode;

  constructor(
    code: AgentStateErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(code, message, options);
  }
}

/** One accepted transition. */
export interface AgentTransition {
  readonly from: AgentState;
  readonly to: AgentState;
  /** Why, as the caller said it (e.g. `RoundOpen r42`, `COMMIT 9f3c…`). Logged; never a secret. */
  readonly reason: string;
  /** `now()` when it happened (ms since the epoch by default). */
  readonly at: number;
}

export type AgentStateListener = (change: AgentTransition) => void;

export interface AgentStateMachineOptions {
  /** Starting state (default `IDLE`; tests and recovery tooling may start elsewhere). */
  readonly initial?: AgentState;
  /** Transitions kept in {@link AgentStateMachine.history}, oldest dropped first (default 64, ≥ 1). */
  readonly historyLimit?: number;
  /** Clock for {@link AgentTransition.at} (default `Date.now`). */
  readonly now?: () => number;
}

/**
 * The site agent's lifecycle as an explicit state machine over {@link AGENT_TRANSITIONS}.
 *
 * Invariants: `state` only ever changes along a table edge; a refused call changes nothing (no
 * state, history or listener call); `history` holds the last `historyLimit` accepted transitions,
 * oldest first, each one's `from` equal to the previous one's `to`; listeners run synchronously,
 * in registration order, after the state and history are updated, once per accepted transition.
 */
export class AgentStateMachine {
  #state: AgentState;
  readonly #historyLimit: number;
  readonly #now: () => number;
  readonly #history: AgentTransition[] = [];
  readonly #listeners = new Set<AgentStateListener>();
  #notifying = false;

  constructor(options: AgentStateMachineOptions = {}) {
    const initial = options.initial ?? 'IDLE';
    if (!isAgentState(initial)) {
      throw new InvalidArgumentError(
        `options.initial must be one of ${AGENT_STATES.join(', ')}, got ${String(initial)}`,
        {
          details: { name: 'options.initial', value: String(initial) },
        },
      );
    }
    const historyLimit = options.historyLimit ?? 64;
    if (!Number.isInteger(historyLimit) || historyLimit < 1) {
      throw new InvalidArgumentError(
        `options.historyLimit must be a positive integer, got ${String(historyLimit)}`,
        {
          details: { name: 'options.historyLimit', value: String(historyLimit) },
        },
      );
    }
    this.#state = initial;
    this.#historyLimit = historyLimit;
    this.#now = options.now ?? Date.now;
  }

  /** The current state. */
  get state(): AgentState {
    return this.#state;
  }

  /** The last accepted transitions, oldest first (a copy; at most `historyLimit`). */
  get history(): readonly AgentTransition[] {
    return [...this.#history];
  }

  /** True when `transition(to, …)` would be accepted now. */
  can(to: AgentState): boolean {
    return isAgentState(to) && isLegalTransition(this.#state, to);
  }

  /**
   * Moves to `to`. Throws `ILLEGAL_TRANSITION` (message names `from → to`) when the table has no
   * such edge, `REENTRANT_TRANSITION` when called from a listener, `INVALID_ARGUMENT` for an
   * unknown state or an empty reason — in each case nothing changes. Throws `LISTENER_FAILED`
   * (cause: the listener's error, or an `AggregateError` of all of them) after the transition was
   * made and every listener ran.
   */
  transition(to: AgentState, reason: string): void {
    if (!isAgentState(to)) {
      throw new InvalidArgumentError(`to must be one of ${AGENT_STATES.join(', ')}, got ${String(to)}`, {
        details: { name: 'to', value: String(to) },
      });
    }
    if (typeof reason !== 'string' || reason.length === 0) {
      throw new InvalidArgumentError('reason must be a non-empty string', { details: { name: 'reason' } });
    }
    const from = this.#state;
    if (this.#notifying) {
      throw new AgentStateError(
        'REENTRANT_TRANSITION',
        `transition ${from} → ${to} requested from a change listener; schedule it instead`,
        { details: { from, to, reason } },
      );
    }
    if (!isLegalTransition(from, to)) {
      throw new AgentStateError(
        'ILLEGAL_TRANSITION',
        `illegal agent transition ${from} → ${to} (${reason}); from ${from} the agent may go to ${AGENT_TRANSITIONS[from].join(', ')}`,
        { details: { from, to, reason } },
      );
    }
    const change: AgentTransition = Object.freeze({ from, to, reason, at: this.#now() });
    this.#state = to;
    this.#history.push(change);
    if (this.#history.length > this.#historyLimit) this.#history.shift();

    const failures: unknown[] = [];
    this.#notifying = true;
    try {
      for (const listener of [...this.#listeners]) {
        try {
          listener(change);
        } catch (error) {
          failures.push(error);
        }
      }
    } finally {
      this.#notifying = false;
    }
    if (failures.length > 0) {
      throw new AgentStateError(
        'LISTENER_FAILED',
        `${failures.length} change listener(s) failed on ${from} → ${to}; the transition stands`,
        {
          cause: failures.length === 1 ? failures[0] : new AggregateError(failures),
          details: { from, to, reason },
        },
      );
    }
  }

  /**
   * Calls `listener` after every accepted transition. Returns a function that unsubscribes it.
   * Registering the same function twice registers it once.
   */
  onChange(listener: AgentStateListener): () => void {
    if (typeof listener !== 'function') {
      throw new InvalidArgumentError('listener must be a function', { details: { name: 'listener' } });
    }
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }
}
