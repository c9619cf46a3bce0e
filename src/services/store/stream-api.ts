import type { NatsConnection } from '@nats-io/transport-node';
import { StoreError } from './store-error.ts';

/** JetStream error codes (`err_code`) the readers tell apart. */
export const STREAM_NOT_FOUND = 10059;
export const NO_MESSAGE_FOUND = 10037;

/** A JetStream API answer, as parsed: an `error`, or the call's fields. */
export interface ApiAnswer {
  readonly error?: { readonly code?: number; readonly err_code?: number; readonly description?: string };
  readonly [field: string]: unknown;
}

/**
 * One JetStream API request on `nc` (a raw request: no consumer, no account check), its answer
 * capped at `maxBytes` before it is parsed.
 *
 * @throws StoreError `STORE_UNAVAILABLE` when the request fails (timeout, no permission), the
 *   answer is larger than `maxBytes` or not JSON.
 */
export async function streamApi(
  nc: NatsConnection,
  subject: string,
  body: unknown,
  maxBytes: number,
  timeoutMs: number,
): Promise<ApiAnswer> {
  let data: Uint8Array;
  try {
    data = (await nc.request(subject, JSON.stringify(body), { timeout: timeoutMs })).data;
  } catch (err) {
    throw new StoreError('STORE_UNAVAILABLE', `${subject}: ${(err as Error).message}`, {
      cause: err,
      details: { subject },
    });
  }
  if (data.length > maxBytes) {
    throw new StoreError(
      'STORE_UNAVAILABLE',
      `${subject}: a ${data.length}-byte answer, at most ${maxBytes}`,
      {
        details: { subject },
      },
    );
  }
  try {
    return JSON.parse(new TextDecoder().decode(data)) as ApiAnswer;
  } catch (err) {
    throw new StoreError('STORE_UNAVAILABLE', `${subject}: the answer is not JSON`, {
      cause: err,
      details: { subject },
    });
  }
}

/** `STORE_UNAVAILABLE` for an API error answer, naming its subject, description and code. */
export function apiFailure(subject: string, error: NonNullable<ApiAnswer['error']>): StoreError {
  return new StoreError(
    'STORE_UNAVAILABLE',
    `${subject}: ${error.description ?? 'error'} (${error.err_code ?? error.code ?? '?'})`,
    { details: { subject, errCode: error.err_code } },
  );
}

/** A message of `STREAM.MSG.GET`'s answer: its subject, sequence and bytes. */
export interface StreamMessage {
  readonly subject: string;
  readonly seq: number;
  readonly data: Uint8Array;
}

/** The message of a `STREAM.MSG.GET` answer (base64 in JSON), or null when it holds none. */
export function answeredMessage(answer: ApiAnswer): StreamMessage | null {
  const message = answer['message'] as { subject?: unknown; seq?: unknown; data?: unknown } | undefined;
  if (typeof message !== 'object' || message === null || typeof message.subject !== 'string') return null;
  const data = typeof message.data === 'string' ? Buffer.from(message.data, 'base64') : Buffer.alloc(0);
  return {
    subject: message.subject,
    seq: typeof message.seq === 'number' ? message.seq : 0,
    data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
  };
}
