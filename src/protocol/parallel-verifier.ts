import { isMarkedAsUntransferable, Worker } from 'node:worker_threads';
import type { SignatureAlgorithm } from '../../crypto/signature/index.ts';
import {
  BlockRejectedError,
  type BlockRejectReason,
  CohortError,
  InvalidArgumentError,
} from '../errors/index.ts';
import { moduleUrl } from '../files/index.ts';
import {
  BlockVerifier,
  type BlockVerifierOptions,
  type VerifiedBlock,
  type VerifiedManifest,
} from './block-verifier.ts';
import type { Encoding } from './messages.ts';
import { RejectionCounters } from './rejection-counters.ts';
import type { RoundContext } from './round-context.ts';

/** A signer's registered public key, as plain data (a key lookup function cannot cross threads). */
export interface SignerKey {
  readonly signer: string;
  readonly algorithm: SignatureAlgorithm;
  readonly publicKey: Uint8Array;
  readonly keyId: string;
}

/** {@link BlockVerifierOptions} with the keys as a list, plus how to run the workers. */
export interface ParallelBlockVerifierOptions extends Omit<BlockVerifierOptions, 'keys'> {
  /** Every registered signer's key; a signer may appear once. */
  readonly keys: readonly SignerKey[];
  /** Worker threads; default 1 (the main thread keeps the homomorphic adds). */
  readonly workers?: number;
  /**
   * Default true: a batch whose frames each own their whole (non-shared, transferable)
   * ArrayBuffer is transferred to the worker, leaving the caller's frames detached (length 0).
   * Otherwise, or when false, the frames are copied into one buffer and that is transferred.
   */
  readonly transferFrames?: boolean;
}

/**
 * A verify worker failed: `VERIFY_WORKER_CRASHED` (it threw outside a check or exited; the
 * verifier is unusable afterwards), `VERIFY_WORKER_FAILED` (an unexpected, non-rejection
 * error while verifying one batch), or `VERIFY_WORKER_CLOSED` (the verifier was closed).
 */
export class VerifyWorkerError extends CohortError {}

/** What the worker is started with (structured-cloned). */
export interface VerifyWorkerData {
  readonly context: RoundContext;
  readonly ckksParamsId: Uint8Array;
  readonly encoding: Encoding | undefined;
  readonly allowedAlgorithms: readonly SignatureAlgorithm[];
  readonly keys: readonly SignerKey[];
  readonly signatureCacheSize: number | undefined;
}

/** One batch, main thread → worker. */
export interface VerifyRequest {
  readonly id: number;
  readonly kind: 'block' | 'manifest';
  readonly frames: Uint8Array[];
}

/** One frame's outcome, worker → main thread. */
export type VerifyResult =
  | { readonly ok: true; readonly value: VerifiedBlock | VerifiedManifest }
  | {
      readonly ok: false;
      readonly reason: BlockRejectReason;
      readonly message: string;
      readonly details: Record<string, unknown>;
    };

/** One batch's answer, worker → main thread. */
export type VerifyResponse =
  | { readonly id: number; readonly results: VerifyResult[] }
  | { readonly id: number; readonly failure: { readonly name: string; readonly message: string } };

interface Pending {
  readonly slot: Slot;
  resolve(results: VerifyResult[]): void;
  reject(err: Error): void;
}

interface Slot {
  readonly worker: Worker;
  pending: number;
  alive: boolean;
}

/**
 * {@link BlockVerifier} on worker threads: the same checks, results and reasons, with rejection
 * counters incremented here on the calling thread. One message carries a whole batch (an update's
 * blocks) and its buffers are transferred both ways, not copied twice. The point is pipelining:
 * while the caller adds update k (SEAL, on its thread), a worker verifies update k+1.
 *
 * A rejection keeps its reason, message and details; a decoder `cause` does not cross threads.
 * Verified blocks' byte fields view the buffer their batch travelled in (the frame's own, or the
 * batch's packed copy), so holding one block keeps that buffer alive.
 * After a worker crash every pending and later call rejects with `VerifyWorkerError`
 * `VERIFY_WORKER_CRASHED`. Call {@link close} when done; idle workers do not keep the process alive.
 */
export class ParallelBlockVerifier {
  readonly counters: RejectionCounters;
  readonly #slots: Slot[] = [];
  readonly #pending = new Map<number, Pending>();
  readonly #transfer: boolean;
  #nextId = 0;
  #failure: VerifyWorkerError | undefined;
  #closing: Promise<void> | undefined;

  constructor(options: ParallelBlockVerifierOptions) {
    const signers = new Set<string>();
    for (const k of options.keys) {
      if (signers.has(k.signer)) {
        throw new InvalidArgumentError(`signer ${JSON.stringify(k.signer)} has two keys`);
      }
      signers.add(k.signer);
    }
    // Same argument checks as the sequential verifier, thrown here rather than in a worker.
    new BlockVerifier({ ...options, keys: () => undefined });
    const workers = options.workers ?? 1;
    if (!Number.isInteger(workers) || workers < 1 || workers > 64) {
      throw new InvalidArgumentError(`workers ${workers}, expects an integer in [1, 64]`);
    }
    this.counters = options.counters ?? new RejectionCounters();
    this.#transfer = options.transferFrames ?? true;
    const workerData: VerifyWorkerData = {
      context: options.context,
      ckksParamsId: options.ckksParamsId,
      encoding: options.encoding,
      allowedAlgorithms: [...options.allowedAlgorithms],
      keys: options.keys.map((k) => ({
        signer: k.signer,
        algorithm: k.algorithm,
        publicKey: k.publicKey,
        keyId: k.keyId,
      })),
      signatureCacheSize: options.signatureCacheSize,
    };
    for (let i = 0; i < workers; i++) {
      const worker = new Worker(moduleUrl('./verify-worker.ts', import.meta.url), { workerData });
      const slot: Slot = { worker, pending: 0, alive: true };
      worker.unref();
      worker.on('message', (msg: VerifyResponse) => this.#answer(msg));
      worker.on('error', (err) =>
        this.#crash(
          new VerifyWorkerError('VERIFY_WORKER_CRASHED', `verify worker crashed: ${err.message}`, {
            cause: err,
          }),
        ),
      );
      worker.on('messageerror', (err) =>
        this.#crash(
          new VerifyWorkerError(
            'VERIFY_WORKER_CRASHED',
            `verify worker sent an unreadable message: ${err.message}`,
            { cause: err },
          ),
        ),
      );
      worker.on('exit', (code) => {
        slot.alive = false;
        if (!this.#closing) {
          this.#crash(
            new VerifyWorkerError('VERIFY_WORKER_CRASHED', `verify worker exited with code ${code}`),
          );
        }
      });
      this.#slots.push(slot);
    }
  }

  /** Workers not yet exited (0 once {@link close} has resolved). */
  get liveWorkers(): number {
    return this.#slots.filter((s) => s.alive).length;
  }

  /**
   * Verifies framed blocks (typically one update's) in one message; each result is the
   * `VerifiedBlock` or the `BlockRejectedError` {@link BlockVerifier.verifyBlock} would give, in order.
   */
  async verifyBlocks(frames: readonly Uint8Array[]): Promise<(VerifiedBlock | BlockRejectedError)[]> {
    if (frames.length === 0) return [];
    const results = await this.#send('block', frames);
    return results.map((r) => (r.ok ? (r.value as VerifiedBlock) : this.#rejection(r)));
  }

  /** Verifies one framed manifest; resolves it typed, or rejects with `BlockRejectedError`. */
  async verifyManifest(frame: Uint8Array): Promise<VerifiedManifest> {
    const [r] = await this.#send('manifest', [frame]);
    if (!r) throw new VerifyWorkerError('VERIFY_WORKER_FAILED', 'verify worker answered no result');
    if (!r.ok) throw this.#rejection(r);
    return r.value as VerifiedManifest;
  }

  /** Terminates the workers; pending and later calls reject with `VERIFY_WORKER_CLOSED`. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#rejectAll(new VerifyWorkerError('VERIFY_WORKER_CLOSED', 'parallel verifier closed'));
      await Promise.all(this.#slots.map((s) => (s.alive ? s.worker.terminate() : undefined)));
    })();
    return this.#closing;
  }

  #send(kind: VerifyRequest['kind'], frames: readonly Uint8Array[]): Promise<VerifyResult[]> {
    if (this.#closing) {
      return Promise.reject(new VerifyWorkerError('VERIFY_WORKER_CLOSED', 'parallel verifier closed'));
    }
    if (this.#failure) return Promise.reject(this.#failure);
    let slot = this.#slots[0]!;
    for (const s of this.#slots) if (s.pending < slot.pending) slot = s;
    const id = this.#nextId++;
    const { out, transfer } = packFrames(frames, this.#transfer);
    const request: VerifyRequest = { id, kind, frames: out };
    return new Promise<VerifyResult[]>((resolve, reject) => {
      this.#pending.set(id, { slot, resolve, reject });
      if (slot.pending++ === 0) slot.worker.ref();
      try {
        slot.worker.postMessage(request, transfer);
      } catch (err) {
        this.#settle(id);
        reject(
          new VerifyWorkerError(
            'VERIFY_WORKER_FAILED',
            `cannot post to the verify worker: ${(err as Error).message}`,
            { cause: err },
          ),
        );
      }
    });
  }

  #answer(msg: VerifyResponse): void {
    const p = this.#settle(msg.id);
    if (!p) return;
    if ('failure' in msg) {
      p.reject(
        new VerifyWorkerError(
          'VERIFY_WORKER_FAILED',
          `verify worker failed: ${msg.failure.name}: ${msg.failure.message}`,
        ),
      );
    } else {
      p.resolve(msg.results);
    }
  }

  /** Removes a pending call, unreferencing its worker when it has nothing left to do. */
  #settle(id: number): Pending | undefined {
    const p = this.#pending.get(id);
    if (!p) return undefined;
    this.#pending.delete(id);
    if (--p.slot.pending === 0 && p.slot.alive) p.slot.worker.unref();
    return p;
  }

  #rejection(r: Extract<VerifyResult, { ok: false }>): BlockRejectedError {
    this.counters.increment(r.reason);
    return new BlockRejectedError(r.reason, r.message, { details: r.details });
  }

  #crash(err: VerifyWorkerError): void {
    if (this.#failure || this.#closing) return;
    this.#failure = err;
    this.#rejectAll(err);
    for (const s of this.#slots) if (s.alive) void s.worker.terminate();
  }

  #rejectAll(err: VerifyWorkerError): void {
    for (const id of [...this.#pending.keys()]) this.#settle(id)?.reject(err);
  }
}

/**
 * The frames to post and the buffers to transfer: the frames themselves when each owns its whole,
 * distinct, transferable ArrayBuffer (and `transfer` allows it), else one packed copy.
 */
function packFrames(
  frames: readonly Uint8Array[],
  transfer: boolean,
): { out: Uint8Array[]; transfer: ArrayBuffer[] } {
  if (transfer) {
    const owned = new Set<ArrayBuffer>();
    for (const f of frames) {
      const b = f.buffer;
      if (
        !(b instanceof ArrayBuffer) ||
        f.byteOffset !== 0 ||
        f.byteLength === 0 ||
        f.byteLength !== b.byteLength ||
        owned.has(b) ||
        isMarkedAsUntransferable(b)
      ) {
        break;
      }
      owned.add(b);
    }
    if (owned.size === frames.length) return { out: [...frames], transfer: [...owned] };
  }
  let total = 0;
  for (const f of frames) total += f.byteLength;
  const packed = new ArrayBuffer(total);
  const out: Uint8Array[] = [];
  let offset = 0;
  for (const f of frames) {
    const view = new Uint8Array(packed, offset, f.byteLength);
    view.set(f);
    out.push(view);
    offset += f.byteLength;
  }
  return { out, transfer: total > 0 ? [packed] : [] };
}
