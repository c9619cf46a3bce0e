let gpu: Promise<GPU> | null = null;

/**
 * The process-wide Dawn `GPU` object. It is created once and kept in this module for the life of
 * the process: Dawn crashes when the object returned by `create()` is garbage collected while
 * adapters or devices made from it are still alive. Also installs the WebGPU globals
 * (`GPUBufferUsage`, `GPUMapMode`, …) on `globalThis`. The `webgpu` package (a native addon) is
 * imported lazily, so importing `gpu/` does not load Dawn.
 *
 * @throws whatever loading dawn.node throws (the caller wraps it into `GPU_NOT_FOUND`).
 */
export function dawnGpu(): Promise<GPU> {
  if (gpu === null) {
    gpu = import('webgpu').then(({ create, globals }) => {
      Object.assign(globalThis, globals);
      return create([]);
    });
    gpu.catch(() => {
      gpu = null;
    });
  }
  return gpu;
}
