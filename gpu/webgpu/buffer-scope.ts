import { InvalidArgumentError } from '../../src/errors/index.ts';
import type { GpuContext } from './gpu-context.ts';

/**
 * Buffers created for one call (a `train`, an `evaluate`, one kernel call); all destroyed by
 * {@link BufferScope.destroy} when it ends. Refuses a buffer larger than the device's storage
 * binding limit with `INVALID_ARGUMENT` naming the buffer.
 */
export class BufferScope {
  readonly #ctx: GpuContext;
  readonly #buffers: GPUBuffer[] = [];
  constructor(ctx: GpuContext) {
    this.#ctx = ctx;
  }
  /** A zero-filled storage buffer of `bytes` bytes. */
  storage(bytes: number, label: string): GPUBuffer {
    this.#checkSize(bytes, label);
    return this.#track(this.#ctx.storage(bytes, label));
  }
  /** A storage buffer holding `data`. */
  upload(data: Float32Array | Uint32Array, label: string): GPUBuffer {
    this.#checkSize(data.byteLength, label);
    return this.#track(this.#ctx.upload(data, label));
  }
  /** Tracks a buffer created elsewhere (uniforms made by the dispatch helpers are small and collected). */
  #track(buffer: GPUBuffer): GPUBuffer {
    this.#buffers.push(buffer);
    return buffer;
  }
  #checkSize(bytes: number, label: string): void {
    const limit = this.#ctx.device.limits.maxStorageBufferBindingSize;
    if (bytes > limit) {
      throw new InvalidArgumentError(
        `${label} needs ${bytes} bytes, more than this GPU's storage binding limit of ${limit} bytes`,
        { details: { name: label, bytes, limit } },
      );
    }
  }
  /** Destroys every buffer the scope created. */
  destroy(): void {
    for (const b of this.#buffers) b.destroy();
    this.#buffers.length = 0;
  }
}
