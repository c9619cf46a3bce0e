/**
 * What the step modules (round-open, voter) need from the agent service besides the
 * {@link AgentCore}: the recovery actions that move the state machine and own the timers.
 */
export interface AgentSteps {
  /** PREPARED with an older round: read its decision from the log and apply it (RECOVERING). */
  settlePrepared(why: string): Promise<void>;
  /** READY and behind the log: catch up (READY → LOADING → READY). */
  catchUp(): Promise<void>;
  /** (Re)starts the timer after which a PREPARED agent reads its decision from the log. */
  armDecisionTimer(round: number): void;
}
