// The aggregator routes a block or manifest by its round and signer before decoding its body
// (issue 22, break 13): readFrameHeader must agree with the full decode on every well-formed
// frame, refuse what cannot be walked, and never read or copy a ciphertext. FutureRoundGate bounds
// the frames that wait for their round's RoundOpen.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeBlockBody,
  decodeManifestBody,
  encodeBlockBody,
  encodeManifestBody,
  FRAME_KIND,
  frame,
  type ParameterBlock,
  type UpdateManifest,
  unframe,
} from '../../../src/protocol/index.ts';
import { readFrameHeader } from '../../../src/services/aggregator/frame-header.ts';
import { FUTURE_ROUND_LIMITS, FutureRoundGate } from '../../../src/services/aggregator/future-round-gate.ts';
import { errorCode } from '../../helpers/error-code.ts';

const ENCODING = {
  bits: 8,
  clip: 0.05,
  laneBits: 16,
  lanesPerSlot: 3,
  maxContributors: 32,
  scaleBits: 40,
  slots: 4096,
  paramsPerBlock: 12_288,
  ckksParamsId: new Uint8Array(32).fill(3),
};

function header(round: number, signer: string) {
  return {
    federation: 'f',
    round,
    signer,
    signerKeyId: 'k1',
    signatureAlgorithm: 1,
    version: 4,
    baseCommit: new Uint8Array(32).fill(1),
    blockCount: 2,
    totalParams: 15_000,
    exampleWeight: 500,
    contributors: 1,
    encoding: ENCODING,
    crcChunkBytes: 16_384,
    contributorsDigest: new Uint8Array(0),
  };
}

function block(round: number, signer: string, ciphertextBytes = 4096): Uint8Array {
  const b: ParameterBlock = {
    ...header(round, signer),
    ciphertext: new Uint8Array(ciphertextBytes).fill(0x5a),
    shardId: 0,
    latticeSignature: new Uint8Array(666).fill(7),
    crc32: [1, 2, 3],
    blockIndex: 1,
    paramOffset: 12_288,
    paramCount: 2712,
    merklePath: [new Uint8Array(32).fill(9)],
  };
  return frame(FRAME_KIND.block, encodeBlockBody(b));
}

function manifest(round: number, signer: string): Uint8Array {
  const m: UpdateManifest = {
    ...header(round, signer),
    updateDigest: new Uint8Array(32).fill(2),
    signature: new Uint8Array(666).fill(8),
    contributorList: [],
    siteManifests: [],
  };
  return frame(FRAME_KIND.manifest, encodeManifestBody(m));
}

describe('readFrameHeader', () => {
  it('reads the round and signer of real blocks and manifests as the full decode does', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
        fc.stringMatching(/^[a-z0-9-]{0,40}$/),
        fc.integer({ min: 0, max: 20_000 }),
        (round, signer, size) => {
          const b = block(round, signer, size);
          const decoded = decodeBlockBody(unframe(b, FRAME_KIND.block));
          expect(readFrameHeader(b, FRAME_KIND.block)).toEqual({
            round: decoded.round,
            signer: decoded.signer,
          });
          const m = manifest(round, signer);
          const dm = decodeManifestBody(unframe(m, FRAME_KIND.manifest));
          expect(readFrameHeader(m, FRAME_KIND.manifest)).toEqual({ round: dm.round, signer: dm.signer });
        },
      ),
      { numRuns: 150 },
    );
  });

  it('reads the header of a block whose body is no ParameterBlock past it (the decode refuses it)', () => {
    // A 4 KiB junk "ciphertext", the round and signer, and no encoding.
    const body = [0x0a, 0x80, 0x20, ...new Array<number>(4096).fill(0x5a), 0x38, 7, 0x42, 1, 0x73];
    const junk = frame(FRAME_KIND.block, Uint8Array.from(body));
    expect(readFrameHeader(junk, FRAME_KIND.block)).toEqual({ round: 7, signer: 's' });
    expect(errorCode(() => decodeBlockBody(unframe(junk, FRAME_KIND.block)))).toBe('BLOCK_BAD_HEADER');
    // Absent fields read as protobuf reads them.
    expect(readFrameHeader(frame(FRAME_KIND.manifest, new Uint8Array(0)), FRAME_KIND.manifest)).toEqual({
      round: 0,
      signer: '',
    });
  });

  it('refuses what cannot be walked, and a bad frame header, before reading anything else', () => {
    const refused = (kind: 1 | 2, body: number[]) =>
      errorCode(() => readFrameHeader(frame(kind, Uint8Array.from(body)), kind));
    expect(refused(1, [0x0a, 0xff, 0xff, 0xff, 0x0f])).toBe('BLOCK_MALFORMED'); // a length past the end
    expect(refused(1, [0x38, 0x80])).toBe('BLOCK_MALFORMED'); // a varint cut short
    expect(refused(1, [0x38, ...new Array<number>(11).fill(0x80), 1])).toBe('BLOCK_MALFORMED');
    expect(refused(1, [0x3a, 1, 1])).toBe('BLOCK_MALFORMED'); // round as bytes
    expect(refused(1, [0x40, 1])).toBe('BLOCK_MALFORMED'); // signer as a varint
    expect(refused(1, [0x0b])).toBe('BLOCK_MALFORMED'); // a group
    expect(refused(1, [0x00])).toBe('BLOCK_MALFORMED'); // field 0
    expect(refused(2, [0x1a, 0x81, 0x02, ...new Array<number>(257).fill(0x61)])).toBe('BLOCK_MALFORMED');
    expect(refused(1, [0x09, 1, 2])).toBe('BLOCK_MALFORMED'); // a fixed64 past the end
    const b = block(3, 's');
    expect(errorCode(() => readFrameHeader(b, FRAME_KIND.manifest))).toBe('BLOCK_MALFORMED');
    expect(errorCode(() => readFrameHeader(b.subarray(0, b.length - 1), FRAME_KIND.block))).toBe(
      'BLOCK_TRUNCATED',
    );
  });

  it('never throws anything but a block refusal on random bytes', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 300 }),
        fc.constantFrom(1 as const, 2 as const),
        (body, kind) => {
          try {
            const h = readFrameHeader(frame(kind, body), kind);
            expect(Number.isFinite(h.round) && typeof h.signer === 'string').toBe(true);
          } catch (err) {
            expect(
              errorCode(() => {
                throw err;
              }),
            ).toMatch(/^BLOCK_(MALFORMED|TRUNCATED)$/);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('FutureRoundGate', () => {
  it('lets one frame per sender wait, a bounded number in all, and frees each on leave', () => {
    expect(FUTURE_ROUND_LIMITS).toEqual({ perSender: 1, total: 64 });
    const gate = new FutureRoundGate({ perSender: 1, total: 2 });
    expect(gate.enter('site-1')).toBeUndefined();
    expect(gate.enter('site-1')).toBe('SENDER_WAITING');
    expect(gate.enter('site-2')).toBeUndefined();
    expect(gate.enter('site-3')).toBe('FULL');
    expect(gate.waiting).toBe(2);
    gate.leave('site-1');
    gate.leave('site-1'); // nothing of site-1 waits any more: no effect
    expect(gate.waiting).toBe(1);
    expect(gate.enter('site-3')).toBeUndefined();
    expect(() => new FutureRoundGate({ perSender: -1, total: 1 })).toThrow(/limits\.perSender/);
    expect(() => new FutureRoundGate({ perSender: 1, total: 1.5 })).toThrow(/limits\.total/);
  });
});
