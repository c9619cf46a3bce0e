import type { TrainingEngine } from '../engine/index.ts';
import type { MatmulKind } from './dense-kernels.ts';
import { GpuContext } from './gpu-context.ts';
import { GpuError } from './gpu-error.ts';
import { dawnGpu } from './gpu-runtime.ts';
import { WebGpuEngine } from './webgpu-engine.ts';

/** Options of {@link createWebGpuEngine}. */
export interface WebGpuEngineOptions {
  /**
   * Accept a software (fallback) adapter such as Mesa llvmpipe/lavapipe or SwiftShader when no real
   * GPU is found. Default false; the environment variable `COHORT_GPU_ALLOW_SOFTWARE=1` also allows it.
   */
  readonly allowSoftware?: boolean;
  /** Adapter asked for first; default 'high-performance' (then the other preference is tried). */
  readonly powerPreference?: GPUPowerPreference;
  /**
   * Matmul kernel: 'tiled' (16×16 workgroup-memory tiles, for GPUs) or 'simple' (untiled, about 2–4×
   * faster on llvmpipe). Default: 'simple' on a software adapter, else 'tiled'. Both give the same sums.
   */
  readonly matmulKernel?: MatmulKind;
}

/** What an adapter reported about itself. */
export interface AdapterSummary {
  readonly requested: string;
  readonly vendor: string;
  readonly architecture: string;
  readonly device: string;
  readonly description: string;
  readonly software: boolean;
}

const SOFTWARE_NAMES = /llvmpipe|lavapipe|swiftshader|softpipe|software rasterizer|microsoft basic render/i;

/** True for a fallback adapter or one whose names say it renders in software. */
export function isSoftwareAdapter(info: {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  isFallbackAdapter?: boolean;
}): boolean {
  if (info.isFallbackAdapter === true) return true;
  if (info.architecture.toLowerCase() === 'software') return true;
  return SOFTWARE_NAMES.test(`${info.vendor} ${info.device} ${info.description}`);
}

/** "webgpu: mesa llvmpipe (software) — llvmpipe: Mesa 25.0.7 …" or "webgpu: nvidia hopper — …". */
export function describeAdapter(a: AdapterSummary): string {
  const arch = a.architecture && a.architecture !== 'software' ? a.architecture : '';
  const name = arch || (a.description.match(/^[\w-]+/)?.[0] ?? '') || a.device || 'unknown device';
  const head = `webgpu: ${a.vendor || 'unknown vendor'} ${name}${a.software ? ' (software)' : ''}`;
  return a.description && a.description !== name ? `${head} — ${a.description}` : head;
}

function summarize(adapter: GPUAdapter, requested: string): AdapterSummary {
  const info = adapter.info;
  const fallback =
    (info as { isFallbackAdapter?: boolean }).isFallbackAdapter ??
    (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter;
  const raw = {
    vendor: info.vendor ?? '',
    architecture: info.architecture ?? '',
    device: info.device ?? '',
    description: info.description ?? '',
  };
  return { requested, ...raw, software: isSoftwareAdapter({ ...raw, isFallbackAdapter: fallback === true }) };
}

function listAdapters(found: readonly AdapterSummary[]): string {
  return found
    .map(
      (a) =>
        `${a.requested}: vendor '${a.vendor}', architecture '${a.architecture}', device '${a.device}', description '${a.description}'${a.software ? ' (software)' : ''}`,
    )
    .join('; ');
}

const HINT =
  'install a GPU driver with Vulkan support (NVIDIA driver, or Mesa ≥ 25 for AMD/Intel) and check that ' +
  'VK_ICD_FILENAMES, if set, points at its ICD json';

/**
 * Finds a WebGPU adapter and returns a {@link TrainingEngine} running on it. Asks for the
 * `powerPreference` adapter first (default high-performance), then the other one; a real GPU wins
 * over a software one. A software adapter is used only when `allowSoftware` (or
 * `COHORT_GPU_ALLOW_SOFTWARE=1`).
 *
 * @throws GpuError `GPU_NOT_FOUND` (no adapter or no device), `GPU_SOFTWARE_REFUSED` (only software
 *   adapters and software not allowed); messages list every adapter tried and what it reported.
 */
export async function createWebGpuEngine(options: WebGpuEngineOptions = {}): Promise<TrainingEngine> {
  const allowSoftware = options.allowSoftware === true || process.env['COHORT_GPU_ALLOW_SOFTWARE'] === '1';
  let gpu: GPU;
  try {
    gpu = await dawnGpu();
  } catch (cause) {
    throw new GpuError(
      'GPU_NOT_FOUND',
      `cannot load WebGPU (Dawn) for ${process.platform}-${process.arch}: ${String(cause)}`,
      {
        cause,
      },
    );
  }
  const first = options.powerPreference ?? 'high-performance';
  const preferences: GPUPowerPreference[] = [
    first,
    first === 'high-performance' ? 'low-power' : 'high-performance',
  ];
  const candidates: { adapter: GPUAdapter; summary: AdapterSummary }[] = [];
  const tried: string[] = [];
  for (const powerPreference of preferences) {
    tried.push(powerPreference);
    const adapter = await gpu.requestAdapter({ powerPreference });
    if (adapter === null) continue;
    const summary = summarize(adapter, powerPreference);
    candidates.push({ adapter, summary });
    if (!summary.software) break;
  }
  const found = candidates.map((c) => c.summary);
  if (candidates.length === 0) {
    throw new GpuError('GPU_NOT_FOUND', `no WebGPU adapter found (requested ${tried.join(', ')}); ${HINT}`, {
      details: { tried, found },
    });
  }
  const chosen = candidates.find((c) => !c.summary.software) ?? (allowSoftware ? candidates[0] : undefined);
  if (chosen === undefined) {
    throw new GpuError(
      'GPU_SOFTWARE_REFUSED',
      `only a software WebGPU adapter was found (${listAdapters(found)}); refusing it because ` +
        `allowSoftware is false (set it or COHORT_GPU_ALLOW_SOFTWARE=1 to train on the CPU rasterizer); ${HINT}`,
      { details: { tried, found } },
    );
  }
  const { adapter, summary } = chosen;
  const limits = adapter.limits;
  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({
      label: 'cohort',
      requiredLimits: {
        maxStorageBufferBindingSize: limits.maxStorageBufferBindingSize,
        maxBufferSize: limits.maxBufferSize,
        maxStorageBuffersPerShaderStage: Math.min(8, limits.maxStorageBuffersPerShaderStage),
      },
    });
  } catch (cause) {
    throw new GpuError(
      'GPU_NOT_FOUND',
      `the adapter ${describeAdapter(summary)} refused to create a device: ${String(cause)}`,
      {
        cause,
        details: { tried, found },
      },
    );
  }
  const matmul = options.matmulKernel ?? (summary.software ? 'simple' : 'tiled');
  return new WebGpuEngine(new GpuContext(device, matmul), describeAdapter(summary));
}
