import { initParameters, MNIST_2NN } from '../federation/index.ts';
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

async function samplesPerSecond(
  engine: TrainingEngine,
  data: Dataset,
  batchSize: number,
  minMs: number,
): Promise<number> {
  const init = initParameters(MNIST_2NN, 1);
  const config = { learningRate: 0.05, momentum: 0, batchSize, epochs: 1, proximalMu: 0, shuffleSeed: 1 };
  await engine.train(MNIST_2NN, init, data, config); // warm-up (pipelines, JIT)
  let samples = 0;
  const start = performance.now();
  while (performance.now() - start < minMs) {
    samples += (await engine.train(MNIST_2NN, init, data, config)).samples;
  }
  return samples / ((performance.now() - start) / 1000);
}

/**
 * Training throughput of the MNIST 2NN (784-200-200-10) on the CPU reference engine and the
 * WebGPU engine, side by side in one run (batch sizes 10 and 50). On a machine without a GPU the
 * WebGPU engine runs on Mesa lavapipe (a software rasterizer on the same CPU).
 */
export async function runTrainBench(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const data = syntheticMnist(Number(process.env.COHORT_BENCH_SAMPLES ?? 2000));
  const cpu = createCpuEngine();
  const allowSoftware = process.env.COHORT_GPU_ALLOW_SOFTWARE !== '0';
  const gpu = await createWebGpuEngine({ allowSoftware });
  const minMs = Number(process.env.COHORT_BENCH_MS ?? 4000);
  try {
    for (const batch of [10, 50]) {
      const c = await samplesPerSecond(cpu, data, batch, minMs);
      const g = await samplesPerSecond(gpu, data, batch, minMs);
      rows.push({
        section: `2NN B=${batch}`,
        metric: cpu.description,
        value: c,
        unit: 'samples/s',
        compare: 'baseline',
      });
      rows.push({
        section: `2NN B=${batch}`,
        metric: gpu.description,
        value: g,
        unit: 'samples/s',
        compare: '',
      });
      const goal = /software|llvmpipe|lavapipe/i.test(gpu.description) ? undefined : 50;
      rows.push({
        section: `2NN B=${batch}`,
        metric: 'WebGPU / CPU',
        value: g / c,
        unit: '×',
        compare: goal ? `≥ ${goal}× (H200 goal)` : 'goal ≥ 50× applies to a real GPU',
        pass: goal ? g / c >= goal : undefined,
      });
    }
  } finally {
    await gpu.dispose();
    await cpu.dispose();
  }
  printTable(`train benchmark: MNIST 2NN, ${data.count} synthetic samples per epoch`, rows);
  const path = writeResults('train', rows, {
    cpu: cpu.description,
    gpu: gpu.description,
    samples: data.count,
  });
  console.log(`\nwrote ${path}`);
  return rows;
}
