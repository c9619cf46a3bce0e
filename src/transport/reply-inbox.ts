import type { Msg, NatsConnection } from '@nats-io/transport-node';
import { FRAME_HEADERS, type FrameFault } from './chunk-frame.ts';
import { ChunkIntake } from './chunk-intake.ts';
import type { TransportDropReason } from './drop-reason.ts';
import { randomId } from './random-id.ts';
import type { ResolvedLimits } from './transport-limits.ts';

/** How a request attempt ended, as seen on the reply inbox. */
export type ReplyOutcome =
  | { readonly kind: 'reply'; readonly data: Uint8Array }
  | { readonly kind: 'remote'; readonly error: string }
  | { readonly kind: 'noResponders' };

/** One request waiting for its reply. */
export interface PendingReply {
  /** The reply subject to publish the request with: `<inbox base>.<random token>`. */
  readonly reply: string;
  outcome?: ReplyOutcome;
  wake?: () => void;
}

/** Options of a {@link ReplyInbox}. */
export interface ReplyInboxOptions {
  readonly limits: ResolvedLimits;
  readonly reassemblyTimeoutMs: number;
  /** Every reply chunk dropped (corrupt, oversize, unsolicited, …). */
  readonly onDrop: (reason: TransportDropReason, subject: string, fault?: FrameFault) => void;
  /** The inbox subscription failed. */
  readonly onError: (err: unknown) => void;
}

/**
 * The reply side of requests: one wildcard subscription on `<inboxPrefix>.<random base>.*`, a
 * random token per request, and the outcome of each. The base and tokens are 128-bit random, so
 * no other member can predict where replies go; the member part of `inboxPrefix` is kept as given
 * (permissions depend on it).
 */
export class ReplyInbox {
  /** `<inboxPrefix>.<random base>`. */
  readonly base: string;
  readonly #requests = new Map<string, PendingReply>();
  readonly #intake: ChunkIntake;
  readonly #onDrop: ReplyInboxOptions['onDrop'];

  constructor(nc: NatsConnection, inboxPrefix: string, options: ReplyInboxOptions) {
    this.base = `${inboxPrefix}.${randomId()}`;
    this.#onDrop = options.onDrop;
    this.#intake = new ChunkIntake({
      limits: options.limits,
      reassemblyTimeoutMs: options.reassemblyTimeoutMs,
      onDrop: options.onDrop,
    });
    nc.subscribe(`${this.base}.*`, {
      callback: (err, msg) => {
        if (err) options.onError(err);
        else this.#onMessage(msg);
      },
    });
  }

  /** Registers a request; release it with {@link ReplyInbox.release}. */
  open(): PendingReply {
    const token = randomId();
    const pending: PendingReply = { reply: `${this.base}.${token}` };
    this.#requests.set(token, pending);
    return pending;
  }

  /** Forgets a request: later replies to it are dropped as `UNSOLICITED`. */
  release(pending: PendingReply): void {
    this.#requests.delete(pending.reply.slice(this.base.length + 1));
  }

  /** The outcome of `p`, waiting for it at most `ms`; `undefined` on timeout. */
  wait(p: PendingReply, ms: number): Promise<ReplyOutcome | undefined> {
    if (p.outcome !== undefined) return Promise.resolve(p.outcome);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        p.wake = undefined;
        resolve(p.outcome);
      }, ms);
      p.wake = () => {
        clearTimeout(timer);
        p.wake = undefined;
        resolve(p.outcome);
      };
    });
  }

  /** Wakes every waiting request (on close) and drops incomplete replies. */
  close(): void {
    for (const p of this.#requests.values()) p.wake?.();
    this.#intake.clear();
  }

  #onMessage(msg: Msg): void {
    const pending = this.#requests.get(msg.subject.slice(this.base.length + 1));
    if (pending === undefined) {
      // Checked before anything else: a reply to no request of ours costs no parsing or buffering.
      this.#onDrop('UNSOLICITED', msg.subject);
      return;
    }
    if (msg.data.length === 0 && msg.headers?.code === 503) {
      if (pending.outcome === undefined) {
        pending.outcome = { kind: 'noResponders' };
        pending.wake?.();
      }
      return;
    }
    const whole = this.#intake.accept(msg);
    if (whole === undefined) return;
    const error = whole.headers?.get(FRAME_HEADERS.error) ?? '';
    pending.outcome = error === '' ? { kind: 'reply', data: whole.data } : { kind: 'remote', error };
    pending.wake?.();
  }
}
