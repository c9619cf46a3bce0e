import { CohortError } from '../../errors/index.ts';

/** Stable codes of {@link AgentError}; never renamed once released. */
export const AGENT_ERROR_CODES = [
  /** A model rebuilt from the log does not hash to the committed H(w′) (or its strategy state differs): the agent halts. */
  'REPLAY_MISMATCH',
  /** Something catch-up needs is not available yet (the log, an aggregate, a snapshot): retried later. */
  'REPLAY_UNAVAILABLE',
  /** The local store's head is not on the federation's chain: move the store aside to rejoin from a snapshot. */
  'STORE_DIVERGED',
] as const;

export type AgentErrorCode = (typeof AGENT_ERROR_CODES)[number];

/** A site agent cannot bring its store to the federation's head. */
export class AgentError extends CohortError {
  declare readonly code: AgentErrorCode;

  constructor(
    code: AgentErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(code, message, options);
  }
}
