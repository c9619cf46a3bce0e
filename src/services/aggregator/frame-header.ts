import { BlockRejectedError } from '../../errors/index.ts';
import { FRAME_KIND, unframe } from '../../protocol/index.ts';

/** What routing a block or manifest needs, read from its header: not verified, not decoded. */
export interface FrameHeader {
  /** The round it names (0 when absent, as protobuf reads it). */
  readonly round: number;
  /** The member it names as its signer ('' when absent). */
  readonly signer: string;
}

/** Protobuf field numbers of `round` and `signer` (cohort.proto). */
const FIELDS = {
  [FRAME_KIND.block]: { round: 7, signer: 8 },
  [FRAME_KIND.manifest]: { round: 2, signer: 3 },
} as const;

/** Longest signer read (member ids are subject tokens, far shorter). */
const MAX_SIGNER_BYTES = 256;

const utf8 = new TextDecoder('utf-8', { fatal: false });

function malformed(problem: string): never {
  throw new BlockRejectedError('MALFORMED', `frame header: ${problem}`);
}

/**
 * Reads the round and signer of a framed ParameterBlock or UpdateManifest without decoding its
 * body: the frame's 12-byte header is checked (`unframe`), then the protobuf fields are walked
 * tag by tag (a length-delimited field, a ciphertext included, is skipped by its length, never
 * read or copied) until both are found. Nothing is allocated but the signer's few bytes, so a
 * frame can be refused for its sender, round or signer at the cost of a few varints.
 *
 * This is a routing read, not a verification: the full decode (`BlockVerifier`) checks the round
 * and signer again, so a frame that names them twice is refused there if the copies differ.
 *
 * @throws BlockRejectedError `MALFORMED` or `TRUNCATED` when the frame header is wrong, and
 *   `MALFORMED` when the fields cannot be walked (a bad varint, a length past the end, a group or
 *   unknown wire type, `round` or `signer` of the wrong wire type, a signer over 256 bytes).
 */
export function readFrameHeader(
  bytes: Uint8Array,
  kind: typeof FRAME_KIND.block | typeof FRAME_KIND.manifest,
): FrameHeader {
  const body = unframe(bytes, kind);
  const want = FIELDS[kind];
  let round: number | undefined;
  let signer: string | undefined;
  let at = 0;
  const varint = (): number => {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (at >= body.length) malformed('varint runs past the end');
      const b = body[at++]!;
      value += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) return value;
      scale *= 128;
    }
    return malformed('varint longer than 10 bytes');
  };
  while (at < body.length && (round === undefined || signer === undefined)) {
    const tag = varint();
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    if (field === 0) malformed('field number 0');
    if (field === want.round) {
      if (wire !== 0) malformed(`round has wire type ${wire}`);
      round = varint();
      continue;
    }
    switch (wire) {
      case 0:
        varint();
        break;
      case 1:
        at += 8;
        break;
      case 2: {
        const length = varint();
        if (length > body.length - at) malformed(`field ${field} is longer than the body`);
        if (field === want.signer) {
          if (length > MAX_SIGNER_BYTES) malformed(`signer of ${length} bytes`);
          signer = utf8.decode(body.subarray(at, at + length));
        }
        at += length;
        break;
      }
      case 5:
        at += 4;
        break;
      default:
        malformed(`wire type ${wire}`);
    }
    if (field === want.signer && wire !== 2) malformed(`signer has wire type ${wire}`);
    if (at > body.length) malformed(`field ${field} runs past the end`);
  }
  return { round: round ?? 0, signer: signer ?? '' };
}
