// What a hostile member can do with its own credentials: publish bytes of its choosing, with
// framing headers of its choosing, on the subjects its NATS user may use.
import { type NatsConnection, headers as natsHeaders } from '@nats-io/transport-node';
import { crcHex, FRAME_HEADERS } from '../../src/transport/index.ts';

/** Framing headers as a sender chooses them (an honest sender's are `Cohort-Id`, chunk 0/1, length, CRC). */
export interface RawFrame {
  readonly id: string;
  readonly chunk?: string;
  readonly length?: number;
  readonly crc?: string;
  /** NATS reply subject to publish with (the responder answers there). */
  readonly reply?: string;
}

function frameHeaders(data: Uint8Array, f: RawFrame) {
  const h = natsHeaders();
  h.set(FRAME_HEADERS.id, f.id);
  h.set(FRAME_HEADERS.chunk, f.chunk ?? '0/1');
  h.set(FRAME_HEADERS.length, String(f.length ?? data.length));
  h.set(FRAME_HEADERS.crc, f.crc ?? crcHex(data));
  return h;
}

/** Publishes one raw chunk (no reply expected). */
export function rawPublish(nc: NatsConnection, subject: string, data: Uint8Array, f: RawFrame): void {
  nc.publish(subject, data, {
    headers: frameHeaders(data, f),
    ...(f.reply === undefined ? {} : { reply: f.reply }),
  });
}

/**
 * Sends one raw chunk as a request and returns the responder's error header (`Cohort-Error`, ''
 * for a plain acknowledgement), or `'timeout'` when nothing answered.
 */
export async function rawRequest(
  nc: NatsConnection,
  subject: string,
  data: Uint8Array,
  f: RawFrame,
  timeoutMs = 3000,
): Promise<string> {
  try {
    const reply = await nc.request(subject, data, { headers: frameHeaders(data, f), timeout: timeoutMs });
    return reply.headers?.get(FRAME_HEADERS.error) ?? '';
  } catch {
    return 'timeout';
  }
}
