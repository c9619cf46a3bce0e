// The live side of the structure-aware fuzzer (test/adversarial/fuzz-live.test.ts): it taps what
// the hostile members' own services send (their transport wrapped), keeps each kind's latest
// message as a template, holds a fresh one back for a moment so that a mutant can go out before
// it, sends a mutant with the member's own NATS user, and says what became of it.
import { randomBytes } from 'node:crypto';
import { headers as natsHeaders } from '@nats-io/transport-node';
import type { MemberContext } from '../../src/services/index.ts';
import { FRAME_HEADERS } from '../../src/transport/index.ts';
import type { FuzzKind, Mutant, Template } from './fuzz-mutations.ts';
import { requestOutcome } from './hostile-client.ts';

/** The kind of a message `sender` sends on `subject` (undefined: not one the fuzzer mutates). */
export function kindOf(
  federation: string,
  sender: string,
  role: 'site' | 'aggregator',
  subject: string,
  data: Uint8Array,
): FuzzKind | undefined {
  const t = subject.split('.');
  if (t[0] !== 'cohort' || t[1] !== federation || t.at(-1) !== sender) return undefined;
  const frames = (prefix: 'update' | 'partial' | 'subpartial') =>
    data[5] === 1 ? (`${prefix}-block` as const) : (`${prefix}-manifest` as const);
  switch (t[2]) {
    case 'heartbeat':
      return role === 'site' ? 'heartbeat' : 'aggregator-heartbeat';
    case 'update':
      return frames('update');
    case 'partial':
      return frames('partial');
    case 'subpartial':
      return frames('subpartial');
    case 'vote':
      return 'vote';
    case 'switched':
      return 'switched';
    case 'snapshot':
      return 'snapshot';
    default:
      return undefined;
  }
}

interface Held {
  readonly template: Template;
  /** Mutants of it in flight: the original waits for them. */
  inFlight: number;
  /** The hold is over: the original goes once no mutant of it is in flight. */
  expired: boolean;
  readonly release: () => void;
}

/** How long a fresh message of each kind is held back for mutants to go out before it (ms). */
const HOLD_MS: Partial<Record<FuzzKind, number>> = { heartbeat: 100, 'aggregator-heartbeat': 100 };
const DEFAULT_HOLD_MS = 1000;

/**
 * Templates of every kind the hostile members' services sent: the latest of each (and a few
 * earlier ones, "another round's" values), and while fuzzing, the freshest one held back for a
 * moment: every mutant of its kind drawn meanwhile goes out before it.
 */
export class TemplateTap {
  readonly #federation: string;
  readonly #latest = new Map<FuzzKind, Template[]>();
  readonly #held = new Map<FuzzKind, Held>();
  readonly #waiters: (() => void)[] = [];
  /** While true, fresh messages are held back (bounded) for a mutant to precede them. */
  holding = false;
  /** Messages seen, by kind. */
  readonly seen = new Map<FuzzKind, number>();

  constructor(federation: string) {
    this.#federation = federation;
  }

  /**
   * `ctx` with its transport's `publish` and `request` tapped: each message of a fuzzed kind is
   * kept as a template (and held back while {@link holding}) before it is sent as it was.
   */
  wrap(ctx: MemberContext): MemberContext {
    const transport = ctx.transport;
    const role = ctx.role === 'site' ? 'site' : 'aggregator';
    const tap =
      <A extends unknown[], R>(send: (subject: string, data: Uint8Array, ...rest: A) => Promise<R>) =>
      async (subject: string, data: Uint8Array, ...rest: A): Promise<R> => {
        const kind = kindOf(this.#federation, ctx.member, role, subject, data);
        if (kind !== undefined)
          await this.#offer({ kind, sender: ctx.member, subject, data, at: Date.now() });
        return send.call(transport, subject, data, ...rest);
      };
    const proxy = new Proxy(transport, {
      get: (target, prop) => {
        if (prop === 'publish') return tap(target.publish);
        if (prop === 'request') return tap(target.request);
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const descriptors: PropertyDescriptorMap = Object.getOwnPropertyDescriptors(ctx);
    descriptors['transport'] = { value: proxy, enumerable: true };
    return Object.defineProperties({}, descriptors) as MemberContext;
  }

  async #offer(t: Template): Promise<void> {
    this.seen.set(t.kind, (this.seen.get(t.kind) ?? 0) + 1);
    const list = this.#latest.get(t.kind) ?? [];
    list.push(t);
    if (list.length > 4) list.shift();
    this.#latest.set(t.kind, list);
    for (const w of this.#waiters.splice(0)) w();
    if (!this.holding || this.#held.has(t.kind)) return;
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    const held: Held = { template: t, inFlight: 0, expired: false, release };
    this.#held.set(t.kind, held);
    const timer = setTimeout(() => {
      held.expired = true;
      if (held.inFlight === 0) release();
    }, HOLD_MS[t.kind] ?? DEFAULT_HOLD_MS);
    await released;
    clearTimeout(timer);
    if (this.#held.get(t.kind) === held) this.#held.delete(t.kind);
  }

  /**
   * The template a mutant of `kind` starts from: the held fresh one (`fresh`, the original is sent
   * after the mutant) or the latest one sent (`sent`, the mutant follows it); undefined if none.
   */
  take(kind: FuzzKind): { template: Template; fresh: boolean; done: () => void } | undefined {
    const held = this.#held.get(kind);
    if (held !== undefined && !held.expired) {
      held.inFlight++;
      const done = () => {
        held.inFlight--;
        if (held.expired && held.inFlight === 0) held.release();
      };
      return { template: held.template, fresh: true, done };
    }
    const latest = this.#latest.get(kind)?.at(-1);
    return latest === undefined ? undefined : { template: latest, fresh: false, done: () => undefined };
  }

  /** Whether a fresh message of `kind` is held back now (a mutant taken now precedes it). */
  fresh(kind: FuzzKind): boolean {
    const held = this.#held.get(kind);
    return held !== undefined && !held.expired;
  }

  /** Earlier templates of `kind` than `t` (other rounds' values). */
  history(kind: FuzzKind, t: Template): Template[] {
    return (this.#latest.get(kind) ?? []).filter((x) => x !== t && x.data !== t.data);
  }

  /** Resolves when any new template arrives, or after `ms`. */
  next(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Releases every held message (fuzzing is over). */
  releaseAll(): void {
    this.holding = false;
    for (const h of this.#held.values()) {
      h.expired = true;
      h.release();
    }
  }
}

/** What became of one mutant, as seen by its sender. */
export type SendResult =
  /** The receiver's handler refused it and answered with a code. */
  | { readonly t: 'refused'; readonly code: string }
  /** The receiver handled it and answered without an error. */
  | { readonly t: 'accepted' }
  /** No answer in time (the transport dropped it, or it is held incomplete). */
  | { readonly t: 'silent' }
  /** The sender's own NATS client or nats-server refused it (`TRANSPORT_PERMISSION`, no responders). */
  | { readonly t: 'sender'; readonly code: string };

/** A fresh message id as an honest sender makes one (128 random bits, base64url). */
export function messageId(): string {
  return randomBytes(16).toString('base64url');
}

/**
 * Sends `mutant` (of `template`) with the hostile member `m`'s own connection: as one raw chunk
 * whose framing headers are the honest ones unless the mutant sets them, as a request (the
 * answer, if any, tells the outcome); a reply-subject mutant is published with that reply
 * subject (no answer can come); a subject mutant goes through the member's own transport.
 */
export async function sendMutant(
  m: MemberContext,
  template: Template,
  mutant: Mutant,
  options: { readonly timeoutMs: number; readonly headers: Readonly<Record<string, string>> },
): Promise<SendResult> {
  if (mutant.subject !== undefined) {
    const outcome = await requestOutcome(
      m.transport.request(mutant.subject, mutant.data, { timeoutMs: options.timeoutMs, maxRetry: 0 }),
    );
    if (outcome === 'accepted') return { t: 'accepted' };
    if (outcome === 'TRANSPORT_TIMEOUT') return { t: 'silent' };
    if (outcome.startsWith('TRANSPORT_')) return { t: 'sender', code: outcome };
    return { t: 'refused', code: outcome };
  }
  const nc = m.transport.connection;
  const h = natsHeaders();
  for (const [name, value] of Object.entries(options.headers)) h.set(name, value);
  for (const [name, value] of mutant.headers?.extra ?? []) h.append(name, value);
  if (mutant.reply !== undefined) {
    nc.publish(template.subject, mutant.data, { headers: h, reply: mutant.reply });
    await nc.flush();
    return { t: 'silent' };
  }
  try {
    const reply = await nc.request(template.subject, mutant.data, { headers: h, timeout: options.timeoutMs });
    const error = reply.headers?.get(FRAME_HEADERS.error) ?? '';
    if (error === '') return { t: 'accepted' };
    return { t: 'refused', code: error.split(' ')[0]! };
  } catch (err) {
    const text = String((err as Error)?.message ?? err);
    if (/timeout/i.test(text)) return { t: 'silent' };
    if (/no responders/i.test(text) || (err as { code?: string }).code === '503') {
      return { t: 'sender', code: 'NO_RESPONDERS' };
    }
    if (/permission/i.test(text)) return { t: 'sender', code: 'TRANSPORT_PERMISSION' };
    return { t: 'sender', code: `CLIENT_ERROR ${text.slice(0, 60)}` };
  }
}
