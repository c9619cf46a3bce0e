import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { generateSigningKeyPair } from '../../crypto/signature/index.ts';
import {
  CONTROL_MAX_BYTES,
  FRAME_KIND,
  frame,
  openControl,
  PROTO_PATH,
  sealControl,
} from '../../src/protocol/index.ts';
import { blockReason } from '../helpers/error-code.ts';

const coordinator = generateSigningKeyPair('falcon-512');
const other = generateSigningKeyPair('falcon-512');
const keys = (s: string) => (s === 'coordinator' ? coordinator : undefined);

const open = {
  federation: 'fed',
  round: 3,
  version: 2,
  baseCommit: new Uint8Array(32).fill(1),
  assignments: [
    { site: 'site-1', aggregator: 'agg-1', examples: 600 },
    { site: 'site-2', aggregator: 'agg-2', examples: 600 },
  ],
  bits: 8,
  clip: Math.fround(0.02),
  maxContributors: 32,
  crcChunkBytes: 16384,
  deadlineUnixMs: 1_800_000_000_000,
  totalExamples: 1200,
  totalParams: 199_210,
  attempt: new Uint8Array(16).fill(7),
};

describe('signed control messages', () => {
  it('round-trips a RoundOpen with its signer', () => {
    const opened = openControl(
      sealControl('round-open', open, 'coordinator', coordinator),
      'round-open',
      keys,
    );
    expect(opened.signer).toBe('coordinator');
    expect(opened.body.round).toBe(3);
    expect(opened.body.assignments).toEqual(open.assignments);
    expect(opened.body.clip).toBe(open.clip);
    expect(Array.from(opened.body.baseCommit)).toEqual(Array.from(open.baseCommit));
    expect(opened.body.deadlineUnixMs).toBe(open.deadlineUnixMs);
  });

  it('refuses another type, an unknown signer, a forged signature and a flipped body byte', () => {
    const sealed = sealControl('round-open', open, 'coordinator', coordinator);
    expect(blockReason(() => openControl(sealed, 'prepare', keys))).toBe('MALFORMED');
    expect(
      blockReason(() =>
        openControl(sealControl('round-open', open, 'coordinator', other), 'round-open', keys),
      ),
    ).toBe('WRONG_SIGNER');
    const flipped = sealed.slice();
    flipped[30]! ^= 1; // inside the body bytes
    expect(['BAD_SIGNATURE', 'MALFORMED', 'WRONG_SIGNER']).toContain(
      blockReason(() => openControl(flipped, 'round-open', keys)),
    );
    expect(blockReason(() => openControl(sealed.subarray(0, 20), 'round-open', keys))).toBe('TRUNCATED');
  });

  it('compares the signer with the one expected before verifying any signature', () => {
    let lookups = 0;
    const counting = (s: string) => {
      lookups++;
      return keys(s);
    };
    const sealed = sealControl('round-open', open, 'coordinator', coordinator);
    expect(blockReason(() => openControl(sealed, 'round-open', counting, { signer: 'site-1' }))).toBe(
      'WRONG_SIGNER',
    );
    expect(lookups).toBe(0); // refused before the key was even looked up
    expect(openControl(sealed, 'round-open', counting, { signer: 'coordinator' }).body.round).toBe(3);
  });

  it('refuses a message over its type cap before decoding it', () => {
    const heartbeat = {
      federation: 'fed',
      member: 'coordinator',
      role: 'site',
      sentUnixMs: 1,
      head: new Uint8Array(CONTROL_MAX_BYTES.heartbeat), // a padded body: far over a heartbeat's size
      examples: 1,
      state: 'READY',
      height: 0,
    };
    const sealed = sealControl('heartbeat', heartbeat, 'coordinator', coordinator);
    expect(sealed.length).toBeGreaterThan(CONTROL_MAX_BYTES.heartbeat);
    expect(blockReason(() => openControl(sealed, 'heartbeat', keys))).toBe('OVERSIZE');
    // Junk of the same size is refused the same way, whatever it holds.
    expect(blockReason(() => openControl(new Uint8Array(64 << 20), 'heartbeat', keys))).toBe('OVERSIZE');
    expect(blockReason(() => openControl(sealed, 'heartbeat', keys, { maxBytes: 1 << 20 }))).toBe('accepted');
  });

  // Found by the live fuzzer: protobufjs decodes an absent bytes field as an empty plain array,
  // which the signature check refused as a caller's bug (INVALID_ARGUMENT), not as input.
  it('refuses an envelope without its body or its signature as MALFORMED input', () => {
    const envelope = protobuf.loadSync(PROTO_PATH).lookupType('cohort.v1.SignedEnvelope');
    const sealed = sealControl('round-open', open, 'coordinator', coordinator);
    for (const field of ['body', 'signature']) {
      const env = envelope.toObject(envelope.decode(sealed.subarray(12))) as Record<string, unknown>;
      expect(env[field], field).toBeInstanceOf(Uint8Array);
      delete env[field];
      const bytes = frame(FRAME_KIND.control, envelope.encode(envelope.fromObject(env)).finish());
      expect(
        blockReason(() => openControl(bytes, 'round-open', keys)),
        `without ${field}`,
      ).toBe('MALFORMED');
    }
  });
});
