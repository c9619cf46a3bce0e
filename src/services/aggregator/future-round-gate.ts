import { InvalidArgumentError } from '../../errors/index.ts';

/** Bounds of a {@link FutureRoundGate}. */
export interface FutureRoundLimits {
  /**
   * Frames of one sender that may wait at once. An honest site or child aggregator sends its
   * frames one request at a time (each acknowledged before the next), so it has at most one.
   */
  readonly perSender: number;
  /** Frames of all senders that may wait at once. */
  readonly total: number;
}

/** Default {@link FutureRoundLimits}. */
export const FUTURE_ROUND_LIMITS: FutureRoundLimits = Object.freeze({ perSender: 1, total: 64 });

/** Why {@link FutureRoundGate.enter} refused a frame. */
export type FutureRoundRefusal = 'SENDER_WAITING' | 'FULL';

/**
 * Counts the frames that wait for their round's RoundOpen (a site may hear the RoundOpen before
 * its aggregator does), per sender and in all, so a sender can hold at most `perSender` of its
 * frames, and all senders `total`, in memory for that wait; any more is refused on arrival. A
 * sender is who the subject names (the federation's permissions let a member publish only its
 * own), so one member cannot take another's place.
 */
export class FutureRoundGate {
  readonly #limits: FutureRoundLimits;
  readonly #waiting = new Map<string, number>();
  #total = 0;

  constructor(limits: FutureRoundLimits = FUTURE_ROUND_LIMITS) {
    for (const name of ['perSender', 'total'] as const) {
      const v = limits?.[name];
      if (!Number.isInteger(v) || v < 0 || v > 1_000_000) {
        throw new InvalidArgumentError(`limits.${name} must be an integer in [0, 1000000]`, {
          details: { name: `limits.${name}` },
        });
      }
    }
    this.#limits = limits;
  }

  /** Frames waiting now, all senders together. */
  get waiting(): number {
    return this.#total;
  }

  /**
   * Lets one frame of `sender` wait, or says why not. Every admitted frame must be handed back
   * with {@link leave} once its wait is over.
   */
  enter(sender: string): FutureRoundRefusal | undefined {
    const mine = this.#waiting.get(sender) ?? 0;
    if (mine >= this.#limits.perSender) return 'SENDER_WAITING';
    if (this.#total >= this.#limits.total) return 'FULL';
    this.#waiting.set(sender, mine + 1);
    this.#total++;
    return undefined;
  }

  /** Ends the wait of one frame of `sender` admitted by {@link enter}. */
  leave(sender: string): void {
    const mine = this.#waiting.get(sender) ?? 0;
    if (mine === 0) return;
    if (mine === 1) this.#waiting.delete(sender);
    else this.#waiting.set(sender, mine - 1);
    this.#total--;
  }
}
