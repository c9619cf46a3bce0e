/**
 * Worker-thread side of {@link ParallelBlockVerifier}: runs a {@link BlockVerifier} built from
 * `workerData` and answers one message per batch of frames. Rejections travel back as reason
 * codes (counted on the main thread); the frames' buffers are transferred back, since the
 * verified blocks' fields are views into them.
 */
import { isMarkedAsUntransferable, parentPort, workerData } from 'node:worker_threads';
import type { PublicSigningKey } from '../../crypto/signature/index.ts';
import { BlockRejectedError } from '../errors/index.ts';
import { BlockVerifier } from './block-verifier.ts';
import type { VerifyRequest, VerifyResponse, VerifyResult, VerifyWorkerData } from './parallel-verifier.ts';

const port = parentPort;
if (!port) throw new Error('verify-worker.ts runs only as a worker thread');

const data = workerData as VerifyWorkerData;
const keys = new Map<string, PublicSigningKey>(
  data.keys.map((k) => [k.signer, { algorithm: k.algorithm, publicKey: k.publicKey, keyId: k.keyId }]),
);
const verifier = new BlockVerifier({
  context: data.context,
  ckksParamsId: data.ckksParamsId,
  encoding: data.encoding,
  keys: (signer) => keys.get(signer),
  allowedAlgorithms: data.allowedAlgorithms,
  signatureCacheSize: data.signatureCacheSize,
});

port.on('message', (req: VerifyRequest) => {
  const results: VerifyResult[] = [];
  try {
    for (const frame of req.frames) {
      try {
        results.push({
          ok: true,
          value: req.kind === 'block' ? verifier.verifyBlock(frame) : verifier.verifyManifest(frame),
        });
      } catch (err) {
        if (!(err instanceof BlockRejectedError)) throw err;
        results.push({ ok: false, reason: err.reason, message: err.message, details: { ...err.details } });
      }
    }
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err));
    const failed: VerifyResponse = { id: req.id, failure: { name: e.name, message: e.message } };
    port.postMessage(failed);
    return;
  }
  // Hand the frames' buffers back: the verified blocks' ciphertexts and other byte fields view them.
  const transfer = new Set<ArrayBuffer>();
  for (const frame of req.frames) {
    const buf = frame.buffer;
    if (buf instanceof ArrayBuffer && buf.byteLength > 0 && !isMarkedAsUntransferable(buf)) transfer.add(buf);
  }
  const answer: VerifyResponse = { id: req.id, results };
  port.postMessage(answer, [...transfer]);
});
