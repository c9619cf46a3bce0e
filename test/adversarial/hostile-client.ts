// What a hostile member can do with its own credentials: publish bytes of its choosing, with
// framing headers of its choosing, on the subjects its NATS user may use.
import { createConnection } from 'node:net';
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

/**
 * How a request through a member's own transport ended: `'accepted'`, the code the responder
 * refused it with (`TRANSPORT_REMOTE`'s `remoteCode`), or the transport's own code
 * (`TRANSPORT_TIMEOUT`, `TRANSPORT_PERMISSION`, …).
 */
export function requestOutcome(request: Promise<unknown>): Promise<string> {
  return request.then(
    () => 'accepted',
    (err: { code?: string; details?: { remoteCode?: string } }) =>
      err.details?.remoteCode ?? err.code ?? 'error',
  );
}

/** What nats-server did with a plaintext client (see {@link plaintextConnect}). */
export interface PlaintextAttempt {
  /** The server's INFO line. */
  readonly info: string;
  /** Whether the INFO announced `tls_required`. */
  readonly tlsRequired: boolean;
  /** Whether the server answered the PING (it took the plaintext CONNECT). */
  readonly pong: boolean;
  /** Whether the server closed the connection (before `timeoutMs`). */
  readonly closed: boolean;
}

/**
 * Speaks plaintext NATS to `host:port` over a bare TCP socket: reads the server's INFO, sends
 * `CONNECT {}` and `PING` unencrypted, and reports what came back (a client library would upgrade
 * to TLS on its own when INFO asks for it; a hostile client need not).
 */
export function plaintextConnect(host: string, port: number, timeoutMs = 5000): Promise<PlaintextAttempt> {
  return new Promise((resolve) => {
    let received = '';
    let sent = false;
    let done = false;
    const socket = createConnection({ host, port });
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const info = received.split('\r\n')[0] ?? '';
      resolve({
        info,
        tlsRequired: /"tls_required":\s*true/.test(info),
        pong: /(^|\r\n)PONG\r\n/.test(received),
        closed,
      });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      if (!sent && received.includes('\r\n')) {
        sent = true;
        socket.write('CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\nPING\r\n');
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => finish(true));
  });
}
