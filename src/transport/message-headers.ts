import type { MsgHdrs } from '@nats-io/transport-node';
import { InvalidArgumentError } from '../errors/index.ts';
import { RESERVED_HEADER_PREFIX } from './chunk-frame.ts';
import type { MessageHeaders } from './transport.ts';

const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/;

/** Bytes that `h` adds to the first chunk of a message (names, values, separators). */
export function userHeaderBytes(h: MessageHeaders | undefined): number {
  if (h === undefined) return 0;
  let n = 0;
  for (const [k, v] of Object.entries(h)) n += Buffer.byteLength(k) + Buffer.byteLength(v) + 4;
  return n;
}

/**
 * Throws `INVALID_ARGUMENT` naming `name` unless `h` is undefined or an object of single-line
 * string values whose names are HTTP tokens outside the reserved `Cohort-` prefix.
 */
export function assertHeaders(name: string, h: unknown): asserts h is MessageHeaders | undefined {
  if (h === undefined) return;
  if (typeof h !== 'object' || h === null) {
    throw new InvalidArgumentError(`${name} must be an object of string values`, { details: { name } });
  }
  for (const [k, v] of Object.entries(h)) {
    if (!HEADER_NAME.test(k) || k.toLowerCase().startsWith(RESERVED_HEADER_PREFIX)) {
      throw new InvalidArgumentError(
        `${name}: header name ${JSON.stringify(k)} is invalid or uses the reserved "Cohort-" prefix`,
        { details: { name, header: k } },
      );
    }
    if (typeof v !== 'string' || /[\r\n]/.test(v)) {
      throw new InvalidArgumentError(`${name}: header ${k} must be a single-line string`, {
        details: { name, header: k },
      });
    }
  }
}

/** The application headers of a received message (framing headers left out). */
export function readHeaders(h: MsgHdrs | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (h === undefined) return out;
  for (const k of h.keys()) {
    if (!k.toLowerCase().startsWith(RESERVED_HEADER_PREFIX)) out[k] = h.get(k);
  }
  return out;
}
