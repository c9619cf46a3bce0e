import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import {
  generateSigningKeyPair,
  type SignatureAlgorithm,
  type SigningKeyPair,
} from '../../crypto/signature/index.ts';
import { assertInteger } from '../errors/index.ts';
import { moduleUrl } from '../files/index.ts';

const SIGNATURE_MODULE = moduleUrl('../../crypto/signature/index.ts', import.meta.url).href;

/** Below this many pairs the workers' start-up costs more than it saves: generated inline. */
const INLINE_BELOW = 16;

// A worker: imports the signature module and posts `count` fresh pairs back (their buffers moved).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
import(workerData.module).then((m) => {
  const pairs = [];
  for (let i = 0; i < workerData.count; i++) pairs.push(m.generateSigningKeyPair(workerData.algorithm));
  parentPort.postMessage(pairs, pairs.flatMap((p) => [p.publicKey.buffer, p.secretKey.buffer]));
});
`;

/**
 * `count` fresh signing key pairs of `algorithm`, generated in up to `threads` worker threads
 * (default: the cores this process may use) — Falcon key generation takes ~0.1 s a pair, so a
 * 1,000-site key ceremony spends minutes on it in one thread. Each pair is as
 * `generateSigningKeyPair` makes it (fresh randomness, no seed); the caller wipes them.
 */
export async function generateSigningKeyPairs(
  algorithm: SignatureAlgorithm,
  count: number,
  threads = availableParallelism(),
): Promise<SigningKeyPair[]> {
  assertInteger('count', count, 0, 1_000_000);
  assertInteger('threads', threads, 1, 1024);
  if (count < INLINE_BELOW || threads === 1) {
    return Array.from({ length: count }, () => generateSigningKeyPair(algorithm));
  }
  const workers = Math.min(threads, count);
  const shares = Array.from({ length: workers }, (_, i) => Math.floor((count + i) / workers));
  const parts = await Promise.all(
    shares.map(
      (share) =>
        new Promise<SigningKeyPair[]>((resolve, reject) => {
          const worker = new Worker(WORKER_SOURCE, {
            eval: true,
            workerData: { module: SIGNATURE_MODULE, algorithm, count: share },
          });
          worker.once('message', (pairs: SigningKeyPair[]) => {
            resolve(pairs);
            void worker.terminate();
          });
          worker.once('error', reject);
          worker.once('exit', (code) => {
            if (code !== 0) reject(new Error(`signing key worker exited with ${code}`));
          });
        }),
    ),
  );
  return parts.flat();
}
