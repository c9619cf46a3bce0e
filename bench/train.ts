import { FEDAVG_CNN, initParameters, MNIST_2NN, type ModelSpec } from '../federation/index.ts';
import { createCpuEngine } from '../gpu/cpu/index.ts';
import type { Dataset, TrainingEngine } from '../gpu/index.ts';
import { createWebGpuEngine } from '../gpu/webgpu/index.ts';
import { type BenchRow, printTable, writeResults } from './table.ts';

function syntheticMnist(count: number): Dataset {
  const features = new Float32Array(count * 784);
  let x = 12345;
  for (let i = 0; i < features.length; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    // MNIST-like sparsity: about 80% of pixels are 0.
    features[i] = x >>> 24 < 51 ? (x & 0xff) / 255 : 0;
  }
  const labels = new Uint8Array(count).map((_, i) => i % 10);
  return { features, labels, count, featureCount: 784, classCount: 10 };
}

/** Training samples per second of `spec` on `engine`: one warm-up epoch, then epochs for ≥ `minMs`. */
async function samplesPerSecond(
  engine: TrainingEngine,
  spec: ModelSpec,
  data: Dataset,
  batchSize: number,
  minMs: number,
): Promise<number> {
  const init = initParameters(spec, 1);
  const config = { learningRate: 0.05, momentum: 0, batchSize, epochs: 1, proximalMu: 0, shuffleSeed: 1 };
  await engine.train(spec, init, data, config); // warm-up (pipelines, JIT)
  let samples = 0;
  const start = performance.now();
  while (performance.now() - start < minMs) {
    samples += (await engine.train(spec, init, data, config)).samples;
  }
  return samples / ((performance.now() - start) / 1000);
}

/**
 * One model's rows per batch size: CPU, and WebGPU with the CPU figure as its floor (the ratio
 * judged against `goal` on a real GPU), or why WebGPU was skipped.
 */
async function compareEngines(
  rows: BenchRow[],
  label: string,
  spec: ModelSpec,
  data: Dataset,
  cpu: TrainingEngine,
  gpu: TrainingEngine,
  minMs: number,
  goal: number | undefined,
): Promise<void> {
  for (const batch of [10, 50]) {
    const section = `${label} B=${batch}`;
    const c = await samplesPerSecond(cpu, spec, data, batch, minMs);
    const cpuRow: BenchRow = { section, metric: cpu.description, value: c, unit: 'samples/s', compare: '' };
    rows.push(cpuRow);
    let g: number;
    try {
      g = await samplesPerSecond(gpu, spec, data, batch, minMs);
    } catch (error) {
      // An engine that does not support the model yet (e.g. no convolution kernels) is skipped.
      const why = error instanceof Error ? error.message.split('\n')[0]!.slice(0, 80) : String(error);
      rows.push({ section, metric: `${gpu.description}: skipped`, value: 0, unit: '', compare: why });
      continue;
    }
    // The CPU reference is the WebGPU row's floor (same model, batch and data, same run); the
    // docs/results.md shows the WebGPU row with it, so the CPU row itself is a detail.
    cpuRow.detail = true;
    const software = /software|llvmpipe|lavapipe/i.test(gpu.description);
    const judged = goal !== undefined && !software;
    rows.push({
      section,
      // The adapter's short name; its full description is in the file's `gpu`.
      metric: gpu.description.split(' — ')[0]!,
      value: g,
      unit: 'samples/s',
      compare: judged
        ? `≥ ${goal}× CPU (H200 goal)`
        : goal !== undefined
          ? `≥ ${goal}× CPU on a real GPU`
          : '',
      pass: judged ? g / c >= goal : undefined,
      floor: { metric: `CPU reference, B=${batch}`, value: c },
    });
  }
}

/**
 * Training throughput of the MNIST 2NN (784-200-200-10) and the FedAvg CNN (1,663,370
 * parameters) on the CPU reference engine and the WebGPU engine, side by side in one run (batch
 * sizes 10 and 50). The CNN runs on fewer samples per epoch (`COHORT_BENCH_CNN_SAMPLES`, default
 * 200): the CPU engine trains it at tens of images per second. An engine that refuses a model is
 * reported as skipped. On a machine without a GPU the WebGPU engine runs on Mesa lavapipe (a
 * software rasterizer on the same CPU).
 */
export async function runTrainBench(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const data = syntheticMnist(Number(process.env.COHORT_BENCH_SAMPLES ?? 2000));
  const cnnData = syntheticMnist(Number(process.env.COHORT_BENCH_CNN_SAMPLES ?? 200));
  const cpu = createCpuEngine();
  const allowSoftware = process.env.COHORT_GPU_ALLOW_SOFTWARE !== '0';
  const gpu = await createWebGpuEngine({ allowSoftware });
  const minMs = Number(process.env.COHORT_BENCH_MS ?? 4000);
  try {
    await compareEngines(rows, '2NN', MNIST_2NN, data, cpu, gpu, minMs, 50);
    await compareEngines(rows, 'CNN', FEDAVG_CNN, cnnData, cpu, gpu, minMs, undefined);
  } finally {
    await gpu.dispose();
    await cpu.dispose();
  }
  printTable(
    `train benchmark: MNIST 2NN (${data.count} synthetic samples per epoch) and FedAvg CNN (${cnnData.count})`,
    rows,
  );
  const path = writeResults('train', rows, {
    cpu: cpu.description,
    gpu: gpu.description,
    samples: data.count,
    cnnSamples: cnnData.count,
  });
  console.log(`\nwrote ${path}`);
  return rows;
}
