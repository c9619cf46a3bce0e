import { CohortError } from '../errors/index.ts';

/** Stable codes of {@link TransportError}; never renamed once released. */
export const TRANSPORT_ERROR_CODES = [
  /** No server of the list could be reached, or the credentials were refused. */
  'TRANSPORT_CONNECT',
  /** A request got no reply within `timeoutMs` on any of its `maxRetry + 1` attempts. */
  'TRANSPORT_TIMEOUT',
  /** A request found no subscriber on its subject on any attempt. */
  'TRANSPORT_NO_RESPONDERS',
  /** The transport (or its connection) is closed. */
  'TRANSPORT_CLOSED',
  /** The server refused a publish or a subscription for this user (permissions violation). */
  'TRANSPORT_PERMISSION',
  /** A chunk failed its CRC32, disagreed with its siblings, or a message could not be reassembled. */
  'TRANSPORT_CHUNK',
  /** A local nats-server (tests, demo) could not be found, started or stopped. */
  'TRANSPORT_SERVER',
  /** The remote handler threw; its code and message travel back in the reply. */
  'TRANSPORT_REMOTE',
] as const;

export type TransportErrorCode = (typeof TRANSPORT_ERROR_CODES)[number];

/**
 * A NATS transport operation failed. `details` carries the subject, attempt counts and sizes
 * (never payload bytes); the underlying client error, when there is one, is the `cause`.
 */
export class TransportError extends CohortError {
  declare readonly code: TransportErrorCode;

  constructor(
    code: TransportErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(code, message, options);
  }
}

/** The message of `err` (an `Error`'s message, else its string form), for error texts. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
