/**
 * Worker-thread side of {@link SiteWorkerPool}: one SEAL runtime per worker. For a range of an
 * update's blocks it does what `encodeUpdate` does for them before signing — quantize that slice
 * of the update (the counter-based rounding indexed from the slice's first parameter, so the
 * levels equal the whole update's), pack each block, add its data slots to the range's part of the
 * aggregate MAC's tag, and encrypt it — and hands the ciphertexts back (transferred), with the
 * range's part of the tag; a block that holds the tag's limbs comes back packed, not encrypted
 * (the limbs need every range's part). The residual is written into the shared residual buffer.
 * It also runs the bare SEAL encode+encrypt floor.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { CkksKeyset, getCkksContext } from '../crypto/ckks/index.ts';
import { laneLayout, packLanes } from '../crypto/lanes/index.ts';
import { AggregateMacKey } from '../crypto/mac/index.ts';
import { quantize } from '../federation/index.ts';
import {
  codecEncoding,
  holdsTagLimbs,
  macBlockSum,
  type RoundMac,
  updateLayout,
} from '../src/protocol/index.ts';
import { bareEncryptor, benchSlots } from './codec-seal-floor.ts';
import type { SiteWorkerData, SiteWorkerReply, SiteWorkerRequest } from './codec-site-pool.ts';

const port = parentPort;
if (!port) throw new Error('codec-site-worker.ts runs only as a worker thread');

const data = workerData as SiteWorkerData;
const ctx = await getCkksContext(data.ckks);
const keyset = CkksKeyset.import(ctx, data.secretKey);
const bare = bareEncryptor(ctx);
const bareSlots = benchSlots(ctx);
const update = new Float32Array(data.update);
const residual = new Float32Array(data.residual);
const mac: RoundMac = { key: AggregateMacKey.fromBytes(data.macKey), nonce: data.macNonce };

function encodeRange(req: Extract<SiteWorkerRequest, { kind: 'encode' }>): SiteWorkerReply {
  const options = { ...data.codec, bits: req.bits };
  const encoding = codecEncoding(ctx, options);
  const layout = laneLayout(options.bits, options.maxContributors, ctx.params.exactBits);
  const perBlock = encoding.paramsPerBlock;
  const n = update.length;
  const geometry = updateLayout(n, encoding);
  const p0 = req.firstBlock * perBlock;
  const p1 = Math.min(req.endBlock * perBlock, n);
  const levels = new Uint8Array(Math.max(0, p1 - p0));
  const paramEnd = p1;
  if (p0 < paramEnd) {
    quantize(
      update.subarray(p0, paramEnd),
      null,
      { bits: req.bits, clip: encoding.clip, seed: req.seed, counterBase: p0 },
      { levels: levels.subarray(0, paramEnd - p0), residual: residual.subarray(p0, paramEnd) },
    );
  }
  const ciphertexts: Uint8Array[] = [];
  const packed: { block: number; slots: Float64Array }[] = [];
  let acc = 0n;
  for (let b = req.firstBlock; b < req.endBlock; b++) {
    const slots = new Float64Array(encoding.slots);
    const offset = b * perBlock - p0;
    const count = Math.min(perBlock, levels.length - offset);
    if (count > 0) packLanes(levels, offset, count, layout, slots);
    acc = macBlockSum(mac, geometry, b, slots, acc);
    if (holdsTagLimbs(geometry, b)) packed.push({ block: b, slots });
    else ciphertexts.push(keyset.encrypt(slots));
  }
  return { id: req.id, ciphertexts, packed, macPart: acc, levels: req.returnLevels ? levels : undefined };
}

port.on('message', (req: SiteWorkerRequest) => {
  try {
    if (req.kind === 'bare') {
      bare.encrypt(bareSlots, req.count);
      port.postMessage({ id: req.id } satisfies SiteWorkerReply);
      return;
    }
    const reply = encodeRange(req);
    port.postMessage(
      reply,
      reply.ciphertexts!.map((c) => c.buffer as ArrayBuffer),
    );
  } catch (err) {
    port.postMessage({ id: req.id, error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  }
});
port.postMessage({ id: -1 } satisfies SiteWorkerReply);
