// A member whose outgoing requests pass through a hostile hand: the member's own services run
// unchanged (real keys, real NATS user), and `tamper` sees each request it sends on its way out.
import type { MemberContext } from '../../src/services/index.ts';

/**
 * What `tamper` makes of one request: the bytes to send instead, or `null` to send nothing (the
 * caller sees an empty reply, as if the request had been answered).
 */
export type RequestTamper = (subject: string, data: Uint8Array) => Uint8Array | null;

/** `ctx`, with every `transport.request` passed through `tamper` first. */
export function tamperedMember(ctx: MemberContext, tamper: RequestTamper): MemberContext {
  const transport = ctx.transport;
  const request = async (subject: string, data: Uint8Array, ...rest: unknown[]) => {
    const out = tamper(subject, data);
    if (out === null) return new Uint8Array(0);
    return (transport.request as (...a: unknown[]) => Promise<Uint8Array>).call(
      transport,
      subject,
      out,
      ...rest,
    );
  };
  const proxy = new Proxy(transport, {
    get: (target, prop) => {
      if (prop === 'request') return request;
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  const descriptors: PropertyDescriptorMap = Object.getOwnPropertyDescriptors(ctx);
  descriptors['transport'] = { value: proxy, enumerable: true };
  return Object.defineProperties({}, descriptors) as MemberContext;
}
