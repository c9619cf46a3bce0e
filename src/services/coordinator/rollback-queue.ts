import { BlockRejectedError, CohortError } from '../../errors/index.ts';
import { openControl } from '../../protocol/index.ts';
import { bytesToHex } from '../../versions/index.ts';
import type { ChainCommit, LogHistory } from '../federation-log/index.ts';
import type { MemberContext } from '../member-context.ts';

/** How far a rollback request's timestamp may be from the coordinator's clock (replay window). */
export const ROLLBACK_REQUEST_WINDOW_MS = 5 * 60_000;

interface Pending {
  readonly target: Uint8Array;
  readonly reason: string;
  readonly resolve: (round: number) => void;
  readonly reject: (err: unknown) => void;
}

/** A rollback the next round will run. */
export interface QueuedRollback {
  readonly target: ChainCommit;
  readonly reason: string;
  /** Called with the round number once the rollback round was decided. */
  started(round: number): void;
}

/**
 * Rollback requests waiting for their round (docs/round-protocol.md, "Rollback": an operator can
 * roll back to any earlier commit, decided by the same 2PC). A target must be a commit on the log's
 * chain below the head; it is checked when requested and again when its round starts (the head may
 * have moved).
 */
export class RollbackQueue {
  readonly #pending: Pending[] = [];
  readonly #wake: () => void;
  #closed = false;

  constructor(wake: () => void) {
    this.#wake = wake;
  }

  /** Queues a rollback to `target`; resolves with its round number once decided. */
  request(history: LogHistory | undefined, target: Uint8Array, reason: string): Promise<number> {
    if (this.#closed) return Promise.reject(new CohortError('STOPPED', 'the coordinator has stopped'));
    if (history !== undefined) {
      const problem = targetProblem(history, target);
      if (problem !== null) return Promise.reject(new CohortError('ROLLBACK_REFUSED', problem));
    }
    return new Promise<number>((resolve, reject) => {
      this.#pending.push({ target: target.slice(), reason, resolve, reject });
      this.#wake();
    });
  }

  /**
   * A `rollback-request` from `cohort versions rollback` (request/reply on
   * `cohort.<F>.admin.rollback`): signed with the coordinator's own key (the operator runs it on
   * the coordinator's host), for this federation, within {@link ROLLBACK_REQUEST_WINDOW_MS} of now,
   * naming a commit below the head. Replies at once with JSON `{ queued, target, height }`; the
   * round itself follows.
   */
  async fromRequest(
    data: Uint8Array,
    ctx: MemberContext,
    history: LogHistory,
    now: number,
  ): Promise<Uint8Array> {
    // Signed with the coordinator's own key (an operator on its host): any other signer is refused first.
    const body = openControl(data, 'rollback-request', ctx.keys, { signer: ctx.member }).body;
    if (body.federation !== ctx.config.federation.id) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `rollback request for federation ${JSON.stringify(body.federation)}`,
      );
    }
    if (!(Math.abs(now - body.requestedUnixMs) <= ROLLBACK_REQUEST_WINDOW_MS)) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `rollback request dated ${body.requestedUnixMs} is outside the replay window`,
      );
    }
    const problem = targetProblem(history, body.target);
    if (problem !== null) throw new CohortError('ROLLBACK_REFUSED', problem);
    const height = history.commitByHash(body.target)!.commit.height;
    void this.request(history, body.target, body.reason).catch(() => undefined);
    return new TextEncoder().encode(
      JSON.stringify({ queued: true, target: bytesToHex(body.target), height }),
    );
  }

  /** The next rollback whose target is still valid (invalid ones are refused and dropped). */
  next(history: LogHistory): QueuedRollback | undefined {
    while (this.#pending.length > 0) {
      const p = this.#pending.shift()!;
      const problem = targetProblem(history, p.target);
      if (problem !== null) {
        p.reject(new CohortError('ROLLBACK_REFUSED', problem));
        continue;
      }
      return { target: history.commitByHash(p.target)!, reason: p.reason, started: p.resolve };
    }
    return undefined;
  }

  /** Requests waiting for their round. */
  get waiting(): number {
    return this.#pending.length;
  }

  /** Refuses every pending request (the coordinator stopped). */
  close(): void {
    this.#closed = true;
    for (const p of this.#pending.splice(0))
      p.reject(new CohortError('STOPPED', 'the coordinator stopped before the rollback'));
  }
}

function targetProblem(history: LogHistory, target: Uint8Array): string | null {
  if (!(target instanceof Uint8Array) || target.length !== 32)
    return 'the rollback target must be a 32-byte commit hash';
  const commit = history.commitByHash(target);
  if (commit === undefined)
    return `commit ${bytesToHex(target).slice(0, 12)} is not on the federation's chain`;
  if (commit.commit.height >= history.head.commit.height) {
    return `commit ${bytesToHex(target).slice(0, 12)} is the head, not an earlier commit`;
  }
  return null;
}
