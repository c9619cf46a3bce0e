import { InvalidArgumentError } from '../../src/errors/index.ts';

const PREFIX = new TextEncoder().encode('cohort/v1/');
const DOMAIN_PATTERN = /^[a-z0-9][a-z0-9.-]{0,63}$/;
const MAX_MESSAGE_BYTES = 0xffff_ffff;

/** Throws `INVALID_ARGUMENT` unless `domain` matches `/^[a-z0-9][a-z0-9.-]{0,63}$/`. */
export function assertDomain(domain: string): void {
  if (typeof domain !== 'string' || !DOMAIN_PATTERN.test(domain)) {
    throw new InvalidArgumentError(
      `domain ${JSON.stringify(String(domain))} must match ${DOMAIN_PATTERN.source} (lowercase, 1-64 characters)`,
      { details: { name: 'domain' } },
    );
  }
}

/**
 * The exact bytes a Cohort signature covers:
 * utf8("cohort/v1/") || utf8(domain) || 0x00 || uint32be(message.length) || message.
 * The domain names what is signed (e.g. "block", "manifest", "vote"), so a signature made for
 * one kind of message never verifies as another.
 *
 * @param domain - matches `/^[a-z0-9][a-z0-9.-]{0,63}$/` (ASCII, so its UTF-8 is unambiguous).
 * @param message - at most 2^32 - 1 bytes.
 * @throws InvalidArgumentError on a bad domain or an oversized message.
 */
export function signingMessage(domain: string, message: Uint8Array): Uint8Array {
  assertDomain(domain);
  if (!(message instanceof Uint8Array)) {
    throw new InvalidArgumentError('message must be a Uint8Array', { details: { name: 'message' } });
  }
  if (message.length > MAX_MESSAGE_BYTES) {
    throw new InvalidArgumentError(`message length ${message.length} exceeds ${MAX_MESSAGE_BYTES}`, {
      details: { name: 'message', actual: message.length },
    });
  }
  const domainBytes = new TextEncoder().encode(domain);
  const out = new Uint8Array(PREFIX.length + domainBytes.length + 1 + 4 + message.length);
  const view = new DataView(out.buffer);
  let offset = 0;
  out.set(PREFIX, offset);
  offset += PREFIX.length;
  out.set(domainBytes, offset);
  offset += domainBytes.length;
  out[offset] = 0x00;
  offset += 1;
  view.setUint32(offset, message.length, false);
  offset += 4;
  out.set(message, offset);
  return out;
}
