export {
  type AdapterSummary,
  createWebGpuEngine,
  describeAdapter,
  isSoftwareAdapter,
  type WebGpuEngineOptions,
} from './adapter.ts';
export type { MatmulKind } from './dense-kernels.ts';
export { GpuError, type GpuErrorCode } from './gpu-error.ts';
export { WebGpuEngine } from './webgpu-engine.ts';
