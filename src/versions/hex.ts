import { InvalidArgumentError } from '../errors/index.ts';

const HEX = /^(?:[0-9a-f]{2})*$/;

/** Lowercase hex of `bytes`. */
export function bytesToHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

/**
 * Inverse of {@link bytesToHex}; accepts only lowercase hex of even length (and of `expectedBytes`
 * bytes when given). Throws `INVALID_ARGUMENT` naming `name`.
 */
export function hexToBytes(name: string, hex: string, expectedBytes?: number): Uint8Array {
  if (typeof hex !== 'string' || !HEX.test(hex)) {
    throw new InvalidArgumentError(`${name} must be lowercase hex of even length`, { details: { name } });
  }
  if (expectedBytes !== undefined && hex.length !== 2 * expectedBytes) {
    throw new InvalidArgumentError(`${name} has ${hex.length / 2} bytes, expects ${expectedBytes}`, {
      details: { name, actual: hex.length / 2, expected: expectedBytes },
    });
  }
  return new Uint8Array(Buffer.from(hex, 'hex'));
}
