import { bytesEqual, sha256Hex } from '../../../crypto/digest/index.ts';
import { canonicalJson } from '../../data/index.ts';
import { BlockRejectedError, CohortError } from '../../errors/index.ts';
import { type AdminActionBody, openControl } from '../../protocol/index.ts';
import { bytesToHex } from '../../versions/index.ts';
import {
  ADMIN_ACTION_ROLLBACK,
  adminActionText,
  type ChainCommit,
  type LogEntry,
  type LogHistory,
} from '../federation-log/index.ts';
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

/** The reply to a signed rollback request (JSON): the same for every copy of one request. */
interface RequestReply {
  readonly queued: true;
  readonly target: string;
  readonly height: number;
  /** Log sequence of the admin action that recorded the request. */
  readonly actionSequence: number;
  /** Present (true) on a copy of a request already accepted: it was not queued again. */
  readonly repeated?: true;
}

/**
 * Rollback requests waiting for their round (docs/round-protocol.md, "Rollback": an operator can
 * roll back to any earlier commit, decided by the same 2PC). A target must be a commit on the log's
 * chain below the head; it is checked when requested and again when its round starts (the head may
 * have moved).
 *
 * Requests through the admin API and signed requests are logged (admin action
 * {@link ADMIN_ACTION_ROLLBACK}) before they are queued, so a coordinator restarted on the log runs
 * those no rollback round has taken ({@link restore}); a signed request is identified by the
 * SHA-256 of its signed body, so a copy of it (a retried request, a recorded one replayed) is answered
 * with the first acceptance and never queued twice.
 */
export class RollbackQueue {
  readonly #pending: Pending[] = [];
  readonly #wake: () => void;
  readonly #appendAction: (action: AdminActionBody) => Promise<LogEntry>;
  /** Signed requests being logged now, by digest: a concurrent copy waits for the same reply. */
  readonly #inFlight = new Map<string, Promise<RequestReply>>();
  #closed = false;

  /**
   * @param wake called when a request is queued.
   * @param appendAction appends an admin action to the federation log (the coordinator's writer).
   */
  constructor(wake: () => void, appendAction: (action: AdminActionBody) => Promise<LogEntry>) {
    this.#wake = wake;
    this.#appendAction = appendAction;
  }

  /**
   * Queues the requests `history` holds that no rollback round has taken yet (a previous run
   * accepted them and stopped before their round was decided), in log order. Call once, at start.
   */
  restore(history: LogHistory): number {
    for (const r of history.pendingRollbacks) {
      this.#pending.push({ target: r.target.slice(), reason: r.reason, resolve: () => {}, reject: () => {} });
      this.#wake(); // once per request: an idle coordinator lets one round through per wake
    }
    return history.pendingRollbacks.length;
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
   * naming a commit below the head. Logged, then queued; replies with JSON
   * `{ queued, target, height, actionSequence }` (the round itself follows). A copy of a request
   * already accepted gets the same reply with `repeated: true` and changes nothing.
   */
  async fromRequest(
    data: Uint8Array,
    ctx: MemberContext,
    history: LogHistory,
    now: number,
  ): Promise<Uint8Array> {
    // Signed with the coordinator's own key (an operator on its host): any other signer is refused first.
    const opened = openControl(data, 'rollback-request', ctx.keys, { signer: ctx.member });
    const body = opened.body;
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
    // The signed body identifies the request: an envelope may carry fields the signature does not
    // cover, so a copy with bytes added there is still the same request.
    const digest = sha256Hex(opened.signedBody);
    const encode = (reply: RequestReply) => new TextEncoder().encode(JSON.stringify(reply));
    const inFlight = this.#inFlight.get(digest);
    if (inFlight !== undefined) return encode({ ...(await inFlight), repeated: true });
    const logged = history.adminActions.find(
      (a) => a.action.action === ADMIN_ACTION_ROLLBACK && adminActionText(a.action, 'request') === digest,
    );
    if (logged !== undefined) {
      // Logged, yet not queued: its append was reported unavailable and landed late. It is still
      // pending in the log, so it runs now rather than at some later restart.
      if (
        history.pendingRollbacks.some((p) => p.entry.sequence === logged.entry.sequence) &&
        !this.#pending.some((p) => bytesEqual(p.target, body.target))
      ) {
        void this.request(history, body.target, body.reason).catch(() => undefined);
      }
      const target = history.commitByHash(body.target);
      return encode({
        queued: true,
        target: bytesToHex(body.target),
        height: target?.commit.height ?? -1,
        actionSequence: logged.entry.sequence,
        repeated: true,
      });
    }
    const problem = targetProblem(history, body.target);
    if (problem !== null) throw new CohortError('ROLLBACK_REFUSED', problem);
    const height = history.commitByHash(body.target)!.commit.height;
    const target = bytesToHex(body.target);
    const accepted = (async (): Promise<RequestReply> => {
      const entry = await this.#appendAction({
        action: ADMIN_ACTION_ROLLBACK,
        caller: ctx.member,
        scope: 'signed-request',
        target,
        arguments: new TextEncoder().encode(
          canonicalJson({
            target,
            reason: body.reason,
            request: digest,
            requestedUnixMs: body.requestedUnixMs,
          }),
        ),
        unixMs: now,
      });
      void this.request(history, body.target, body.reason).catch(() => undefined);
      return { queued: true, target, height, actionSequence: entry.sequence };
    })();
    this.#inFlight.set(digest, accepted);
    try {
      return encode(await accepted);
    } finally {
      this.#inFlight.delete(digest);
    }
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
