import { GpuError } from './gpu-error.ts';

/** One prepared compute dispatch: pipeline, its bound buffers and the workgroup grid. */
export interface Dispatch {
  readonly pipeline: GPUComputePipeline;
  readonly bindGroup: GPUBindGroup;
  readonly groups: readonly [number, number, number];
}

/** A field of a kernel's uniform struct, in declaration order; every field is 4 bytes. */
export type UniformField = readonly ['u32' | 'f32', number];

/** Most workgroups per grid dimension that WebGPU guarantees. */
export const MAX_GROUPS_PER_DIMENSION = 65535;

/** Packs uniform fields (u32 or f32, 4 bytes each) into a buffer padded to 16 bytes. */
export function packUniform(fields: readonly UniformField[]): ArrayBuffer {
  const bytes = Math.max(16, Math.ceil((fields.length * 4) / 16) * 16);
  const data = new ArrayBuffer(bytes);
  const view = new DataView(data);
  fields.forEach(([type, value], i) => {
    if (type === 'u32') view.setUint32(i * 4, value >>> 0, true);
    else view.setFloat32(i * 4, value, true);
  });
  return data;
}

/**
 * Grid for an element-wise kernel of `n` invocations with `workgroupSize` threads per group: a 2D
 * grid when n needs more than 65535 groups. The kernel computes `i = gid.x + gid.y · stride`.
 */
export function elementwiseGrid(
  n: number,
  workgroupSize: number,
): { groups: [number, number, number]; stride: number } {
  const total = Math.max(1, Math.ceil(n / workgroupSize));
  const x = Math.min(total, MAX_GROUPS_PER_DIMENSION);
  const y = Math.ceil(total / x);
  return { groups: [x, y, 1], stride: x * workgroupSize };
}

/**
 * A WebGPU device with the helpers the kernels need: cached pipelines, buffer creation, uniform
 * packing, encoding and read-back, with errors turned into {@link GpuError}.
 */
export class GpuContext {
  readonly device: GPUDevice;
  /** Matmul kernel: 'tiled' on GPUs, 'simple' (untiled) on software adapters. */
  readonly matmulKind: 'tiled' | 'simple';
  readonly #pipelines = new Map<string, GPUComputePipeline>();
  #lost: string | null = null;
  #disposed = false;

  constructor(device: GPUDevice, matmulKind: 'tiled' | 'simple' = 'tiled') {
    this.device = device;
    this.matmulKind = matmulKind;
    device.lost.then(
      (info) => {
        this.#lost = `${info.reason}: ${info.message}`;
      },
      () => {},
    );
  }

  /** Throws `GPU_DEVICE_LOST` when the device is gone or the engine was disposed. */
  assertAlive(): void {
    if (this.#disposed) throw new GpuError('GPU_DEVICE_LOST', 'the WebGPU engine was disposed');
    if (this.#lost !== null) {
      throw new GpuError('GPU_DEVICE_LOST', `the WebGPU device was lost (${this.#lost})`, {
        details: { reason: this.#lost },
      });
    }
  }

  /** The compute pipeline of `code` (entry point `main`, layout 'auto'), compiled once per key. */
  pipeline(key: string, code: string): GPUComputePipeline {
    let pipeline = this.#pipelines.get(key);
    if (pipeline === undefined) {
      const module = this.device.createShaderModule({ label: key, code });
      pipeline = this.device.createComputePipeline({
        label: key,
        layout: 'auto',
        compute: { module, entryPoint: 'main' },
      });
      this.#pipelines.set(key, pipeline);
    }
    return pipeline;
  }

  /** A zero-filled storage buffer of at least `byteLength` bytes (copyable both ways). */
  storage(byteLength: number, label: string): GPUBuffer {
    return this.device.createBuffer({
      label,
      size: Math.max(16, Math.ceil(byteLength / 16) * 16),
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    });
  }

  /** A storage buffer holding `data`. */
  upload(data: Float32Array | Uint32Array, label: string): GPUBuffer {
    const buffer = this.storage(data.byteLength, label);
    if (data.length > 0)
      this.device.queue.writeBuffer(buffer, 0, data.buffer, data.byteOffset, data.byteLength);
    return buffer;
  }

  /** A uniform buffer holding the packed fields. */
  uniform(fields: readonly UniformField[], label: string): GPUBuffer {
    const data = packUniform(fields);
    const buffer = this.device.createBuffer({
      label,
      size: data.byteLength,
      usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
    });
    this.device.queue.writeBuffer(buffer, 0, data);
    return buffer;
  }

  /** Rewrites a uniform buffer made by {@link uniform} (ordered before later submits). */
  writeUniform(buffer: GPUBuffer, fields: readonly UniformField[]): void {
    this.device.queue.writeBuffer(buffer, 0, packUniform(fields));
  }

  /** Binds `buffers` to bindings 0, 1, … of group 0 of the pipeline of `key`. */
  dispatch(
    key: string,
    code: string,
    buffers: readonly GPUBuffer[],
    groups: readonly [number, number, number],
  ): Dispatch {
    const pipeline = this.pipeline(key, code);
    const bindGroup = this.device.createBindGroup({
      label: key,
      layout: pipeline.getBindGroupLayout(0),
      entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer } })),
    });
    return { pipeline, bindGroup, groups };
  }

  /** Records the dispatches, in order, into one compute pass of `encoder`. */
  encode(encoder: GPUCommandEncoder, dispatches: readonly Dispatch[]): void {
    const pass = encoder.beginComputePass();
    for (const d of dispatches) {
      if (d.groups[0] === 0 || d.groups[1] === 0 || d.groups[2] === 0) continue;
      pass.setPipeline(d.pipeline);
      pass.setBindGroup(0, d.bindGroup);
      pass.dispatchWorkgroups(d.groups[0], d.groups[1], d.groups[2]);
    }
    pass.end();
  }

  /** Encodes and submits the dispatches as one command buffer. */
  submit(dispatches: readonly Dispatch[]): void {
    const encoder = this.device.createCommandEncoder();
    this.encode(encoder, dispatches);
    this.device.queue.submit([encoder.finish()]);
  }

  /** Copies the first `byteLength` bytes of each buffer back to the host (one submit, one wait). */
  async read(sources: readonly { buffer: GPUBuffer; byteLength: number }[]): Promise<ArrayBuffer[]> {
    const encoder = this.device.createCommandEncoder();
    const staging = sources.map(({ buffer, byteLength }) => {
      const size = Math.max(4, Math.ceil(byteLength / 4) * 4);
      const target = this.device.createBuffer({
        label: 'readback',
        size,
        usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      });
      encoder.copyBufferToBuffer(buffer, 0, target, 0, size);
      return target;
    });
    this.device.queue.submit([encoder.finish()]);
    try {
      return await Promise.all(
        staging.map(async (target, i) => {
          await target.mapAsync(GPUMapMode.READ);
          const copy = target.getMappedRange().slice(0, sources[i]!.byteLength);
          target.unmap();
          return copy;
        }),
      );
    } catch (cause) {
      this.assertAlive();
      throw new GpuError('GPU_INTERNAL', `reading results back from the GPU failed: ${String(cause)}`, {
        cause,
      });
    } finally {
      for (const target of staging) target.destroy();
    }
  }

  /**
   * Runs `body` inside validation and out-of-memory error scopes and throws `GPU_INTERNAL` naming
   * the first WebGPU error it caused (or `GPU_DEVICE_LOST` when the device went away).
   */
  async scoped<T>(what: string, body: () => Promise<T>): Promise<T> {
    this.assertAlive();
    this.device.pushErrorScope('out-of-memory');
    this.device.pushErrorScope('validation');
    let result: T;
    try {
      result = await body();
    } finally {
      const validation = await this.device.popErrorScope();
      const memory = await this.device.popErrorScope();
      const error = validation ?? memory;
      if (error !== null) {
        this.assertAlive();
        // biome-ignore lint/correctness/noUnsafeFinally: a WebGPU error outranks whatever body threw.
        throw new GpuError('GPU_INTERNAL', `WebGPU error during ${what}: ${error.message}`, {
          details: { what, kind: validation === null ? 'out-of-memory' : 'validation' },
        });
      }
    }
    this.assertAlive();
    return result;
  }

  /** Destroys the device (and with it every buffer); later calls throw `GPU_DEVICE_LOST`. */
  destroy(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#pipelines.clear();
    this.device.destroy();
  }
}
