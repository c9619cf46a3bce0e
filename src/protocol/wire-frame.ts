import { BlockRejectedError } from '../errors/index.ts';

/** Frame kinds: what protobuf message the body holds. */
export const FRAME_KIND = Object.freeze({ block: 1, manifest: 2, control: 3 } as const);
export type FrameKind = (typeof FRAME_KIND)[keyof typeof FRAME_KIND];

/** Current wire version; a receiver rejects any other as MALFORMED. */
export const WIRE_VERSION = 1;
/** Bytes before the protobuf body: "COHB", version, kind, two zero bytes, u32 body length (BE). */
export const FRAME_HEADER_BYTES = 12;
/** Largest body accepted (64 MiB): a frame claiming more is refused before any allocation. */
export const MAX_FRAME_BODY_BYTES = 64 * 1024 * 1024;

const MAGIC = [0x43, 0x4f, 0x48, 0x42]; // "COHB"

/**
 * Wraps a protobuf body in Cohort's frame. The frame makes "truncated" and "not ours" two
 * distinct, deterministic outcomes, which bare protobuf cannot tell apart.
 */
export function frame(kind: FrameKind, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(FRAME_HEADER_BYTES + body.length);
  out.set(MAGIC, 0);
  out[4] = WIRE_VERSION;
  out[5] = kind;
  new DataView(out.buffer).setUint32(8, body.length, false);
  out.set(body, FRAME_HEADER_BYTES);
  return out;
}

/**
 * Returns the body of a frame of the expected kind (a view, no copy).
 * Throws `BlockRejectedError` TRUNCATED (too short for the header or the declared body) or
 * MALFORMED (wrong magic, version, kind, reserved bytes, trailing bytes or oversize length).
 */
export function unframe(bytes: Uint8Array, kind: FrameKind): Uint8Array {
  if (!(bytes instanceof Uint8Array)) {
    throw new BlockRejectedError('MALFORMED', 'frame must be a Uint8Array');
  }
  if (bytes.length < FRAME_HEADER_BYTES) {
    // Only a prefix of a real frame is "truncated"; anything else is not ours.
    const prefix = Math.min(bytes.length, MAGIC.length);
    const magicOk = MAGIC.slice(0, prefix).every((b, i) => bytes[i] === b);
    throw new BlockRejectedError(
      magicOk ? 'TRUNCATED' : 'MALFORMED',
      `frame of ${bytes.length} bytes is shorter than its ${FRAME_HEADER_BYTES}-byte header`,
    );
  }
  if (!MAGIC.every((b, i) => bytes[i] === b)) {
    throw new BlockRejectedError('MALFORMED', 'frame does not start with the COHB magic');
  }
  if (bytes[4] !== WIRE_VERSION) {
    throw new BlockRejectedError('MALFORMED', `wire version ${bytes[4]}, this build speaks ${WIRE_VERSION}`);
  }
  if (bytes[5] !== kind) {
    throw new BlockRejectedError('MALFORMED', `frame kind ${bytes[5]}, expected ${kind}`);
  }
  if (bytes[6] !== 0 || bytes[7] !== 0) {
    throw new BlockRejectedError('MALFORMED', 'frame reserved bytes are not zero');
  }
  const length = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(8, false);
  if (length > MAX_FRAME_BODY_BYTES) {
    throw new BlockRejectedError(
      'MALFORMED',
      `frame declares ${length} body bytes, limit ${MAX_FRAME_BODY_BYTES}`,
    );
  }
  const available = bytes.length - FRAME_HEADER_BYTES;
  if (available < length) {
    throw new BlockRejectedError('TRUNCATED', `frame body has ${available} of ${length} bytes`);
  }
  if (available > length) {
    throw new BlockRejectedError('MALFORMED', `${available - length} trailing bytes after the frame body`);
  }
  return bytes.subarray(FRAME_HEADER_BYTES);
}
