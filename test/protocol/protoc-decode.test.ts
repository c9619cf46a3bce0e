import { spawnSync } from 'node:child_process';
import { dirname } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_CODEC_OPTIONS,
  encodeUpdate,
  FRAME_KIND,
  PROTO_PATH,
  unframe,
} from '../../src/protocol/index.ts';
import { type CodecFixture, codecFixture, randomUpdate } from '../helpers/codec-fixture.ts';

function protocDecode(type: string, body: Uint8Array): string {
  const r = spawnSync('protoc', [`--decode=${type}`, `-I${dirname(PROTO_PATH)}`, PROTO_PATH], {
    input: body,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.error)
    throw new Error(`protoc is not installed (.ci/run installs protobuf-compiler): ${r.error.message}`);
  expect(r.stderr.toString()).toBe('');
  expect(r.status).toBe(0);
  return r.stdout.toString();
}

describe('emitted blocks decode with protoc from the checked-in .proto', () => {
  let fx: CodecFixture;
  beforeAll(async () => {
    fx = await codecFixture(1);
  });

  it('ParameterBlock and UpdateManifest', () => {
    const e = encodeUpdate({
      update: randomUpdate(20_000, 3, 0.02),
      residual: null,
      credentials: fx.sites[0]!,
      context: fx.context,
      options: DEFAULT_CODEC_OPTIONS,
      exampleWeight: 42.5,
    });
    const text = protocDecode('cohort.v1.ParameterBlock', unframe(e.blocks[1]!, FRAME_KIND.block));
    expect(text).toContain('federation: "test-fed"');
    expect(text).toContain('round: 7');
    expect(text).toContain('version: 3');
    expect(text).toContain('signer: "site-0"');
    expect(text).toContain('block_index: 1');
    expect(text).toContain('block_count: 2');
    expect(text).toContain('signature_algorithm: 1');
    expect(text).toContain('example_weight: 42.5');
    expect(text).toMatch(/encoding \{\s+bits: 8/);
    expect(text).toMatch(/ciphertext: "/);
    expect(text.match(/crc32: \d+/g)?.length).toBeGreaterThan(1);
    const manifest = protocDecode('cohort.v1.UpdateManifest', unframe(e.manifest, FRAME_KIND.manifest));
    expect(manifest).toContain('block_count: 2');
    expect(manifest).toContain('total_params: 20000');
  });
});
