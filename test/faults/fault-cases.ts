// The cases of the fault suite, in the order of its outcome table (docs/faults.md). The table is
// written only when every case here reported a row (test/faults/fault-table.ts).

/** One row of the outcome table, reported by a case once all its checks passed. */
export interface FaultRow {
  /** One of {@link FAULT_CASES}. */
  readonly id: string;
  /** The fault, in words (what was killed or stopped, how). */
  readonly fault: string;
  /** Where in the round it was injected. */
  readonly injectedAt: string;
  /** How the faulted round and the one after it ended. */
  readonly outcome: string;
  /** Decisions the case added to the log. */
  readonly committed: number;
  readonly aborted: number;
  /** Live sites whose store head differs from the log's head after the case (always 0 here). */
  readonly drift: number;
  /** Log entries after the case (contiguous sequences, each verified). */
  readonly logEntries: number;
  /** Entries the case appended. */
  readonly appended: number;
}

/** Case ids, in table order. */
export const FAULT_CASES = [
  'site-mid-upload',
  'site-hung',
  'aggregator-mid-sum',
  'aggregator-tree-parent',
  'coordinator.round-open-logged',
  'coordinator.partials-logged',
  'coordinator.prepare-sent',
  'coordinator.votes-logged',
  'coordinator.decision-logged',
  'nats-server-restart',
  'jetstream-cluster-node',
] as const;

export type FaultCaseId = (typeof FAULT_CASES)[number];
