import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initParameters, type ModelSpec, mlp } from '../../federation/index.ts';
import { createCpuEngine } from '../../gpu/index.ts';
import { parseConfig } from '../../src/config/index.ts';
import { exportMetadata } from '../../src/history/index.ts';
import { encodeRoundParams } from '../../src/round/index.ts';
import type { ChainCommit } from '../../src/services/federation-log/index.ts';
import { encodeSafetensors, genesisCommit, modelTensors } from '../../src/versions/index.ts';
import {
  PYTORCH_EXAMPLES,
  SYSTEM_PYTHON,
  smallCnn,
  tempFolder,
  torchUnavailable,
} from '../trainer/trainer-fixtures.ts';

// A model written exactly as `cohort versions export` writes it (modelTensors + exportMetadata),
// loaded into PyTorch by examples/pytorch/load_export.py: the parameter count, the sum of the
// weights, and the logits on a fixed input must agree with Cohort's own CPU engine.

const NO_TORCH = torchUnavailable();
const TITLE = 'versions export → PyTorch (examples/pytorch/load_export.py)';

interface Loaded {
  parameters: number;
  checksum: number;
  logits: number[];
  stdout: string;
}

function loadExport(file: string, ...flags: string[]): Loaded {
  const run = spawnSync(
    SYSTEM_PYTHON,
    [join(PYTORCH_EXAMPLES, 'load_export.py'), file, '--probe', ...flags],
    {
      encoding: 'utf8',
      timeout: 120_000,
    },
  );
  if (run.status !== 0) throw new Error(`load_export.py exited ${run.status}: ${run.stderr}`);
  const field = (name: string) => run.stdout.match(new RegExp(`^${name}: (.*)$`, 'm'))?.[1];
  const parameters = Number(field('parameters'));
  const checksum = Number(field('checksum'));
  const logits = (field('probe logits') ?? '').split(' ').map(Number);
  for (const v of [parameters, checksum, ...logits]) {
    if (!Number.isFinite(v)) throw new Error(`load_export.py printed a non-number: ${run.stdout}`);
  }
  return { parameters, checksum, logits, stdout: run.stdout };
}

function commitOf(parameters: Float32Array): ChainCommit {
  const params = encodeRoundParams({ round: 0, bits: 8, clip: 1, strategy: 'fedavg', learningRate: 0.1 });
  return {
    commit: genesisCommit(parameters, params),
    sequence: 0,
    unixMs: 0,
    decision: null,
    openSequence: 0,
  };
}

/** The probe input load_export.py uses: x[i] = ((i mod 7) − 3) / 4. */
function probeInput(features: number): Float32Array {
  return Float32Array.from({ length: features }, (_, i) => ((i % 7) - 3) / 4);
}

/**
 * Cohort's CPU engine on the probe row, labelled with each class once: its mean cross-entropy is
 * logsumexp(z) − mean(z) for the logits z, which the PyTorch logits must reproduce.
 */
async function engineLoss(spec: ModelSpec, parameters: Float32Array, features: number, classes: number) {
  const probe = probeInput(features);
  const rows = new Float32Array(features * classes);
  for (let c = 0; c < classes; c++) rows.set(probe, c * features);
  const engine = createCpuEngine();
  try {
    const result = await engine.evaluate(spec, parameters, {
      features: rows,
      labels: Uint8Array.from({ length: classes }, (_, c) => c),
      count: classes,
      featureCount: features,
      classCount: classes,
    });
    return result.loss;
  } finally {
    await engine.dispose();
  }
}

function crossEntropyOfAll(logits: number[]): number {
  const top = Math.max(...logits);
  const logSumExp = top + Math.log(logits.reduce((s, z) => s + Math.exp(z - top), 0));
  return logSumExp - logits.reduce((s, z) => s + z, 0) / logits.length;
}

const sum = (values: Float32Array): number => values.reduce((s, v) => s + v, 0);
const config = parseConfig({ federation: { id: 'export-test' }, learning: { model: 'logreg' } });

describe.skipIf(NO_TORCH !== undefined)(
  NO_TORCH === undefined ? TITLE : `${TITLE} — SKIPPED: ${NO_TORCH}`,
  () => {
    let root: string;

    beforeAll(() => {
      root = tempFolder('export-torch');
    });

    afterAll(() => {
      if (root !== undefined) rmSync(root, { recursive: true, force: true });
    });

    const writeExport = (
      name: string,
      spec: ModelSpec,
      parameters: Float32Array,
      metadata?: Record<string, string>,
    ) => {
      const file = join(root, name);
      const bytes = encodeSafetensors(
        modelTensors(spec, parameters),
        metadata ?? exportMetadata(config, spec, commitOf(parameters)),
      );
      writeFileSync(file, bytes);
      return file;
    };

    it('loads an MLP export from its metadata: same count, checksum and logits as Cohort', async () => {
      const spec = mlp(6, [5, 4], 3);
      const parameters = initParameters(spec, 17);
      const loaded = loadExport(writeExport('mlp.safetensors', spec, parameters));
      expect(loaded.parameters).toBe(parameters.length);
      expect(loaded.checksum).toBeCloseTo(sum(parameters), 9);
      expect(loaded.logits).toHaveLength(3);
      expect(crossEntropyOfAll(loaded.logits)).toBeCloseTo(await engineLoss(spec, parameters, 6, 3), 5);
    });

    it('reads the older metadata form (cohort_layers as widths, no cohort_input) and --layers', async () => {
      const spec = mlp(6, [5, 4], 3);
      const parameters = initParameters(spec, 18);
      const current = exportMetadata(config, spec, commitOf(parameters));
      const legacy: Record<string, string> = { ...current, cohort_layers: '[6,5,4,3]' };
      delete legacy['cohort_input'];
      const legacyFile = writeExport('legacy.safetensors', spec, parameters, legacy);
      const bare = writeExport('bare.safetensors', spec, parameters, { format: 'pt' });
      const expected = await engineLoss(spec, parameters, 6, 3);
      for (const loaded of [loadExport(legacyFile), loadExport(bare, '--layers', '6,5,4,3')]) {
        expect(loaded.parameters).toBe(parameters.length);
        expect(loaded.checksum).toBeCloseTo(sum(parameters), 9);
        expect(crossEntropyOfAll(loaded.logits)).toBeCloseTo(expected, 5);
      }
    });

    it.skipIf(smallCnn('explicit') === undefined)(
      'loads a CNN export (conv2d, max-pool, flatten, dense, softmax) with the engine’s logits',
      async () => {
        const spec = smallCnn('explicit')!;
        const parameters = initParameters(spec, 19);
        const loaded = loadExport(writeExport('cnn.safetensors', spec, parameters));
        expect(loaded.stdout).toContain('Conv2d(1, 2, kernel_size=(3, 3)');
        expect(loaded.parameters).toBe(parameters.length);
        expect(loaded.checksum).toBeCloseTo(sum(parameters), 9);
        expect(crossEntropyOfAll(loaded.logits)).toBeCloseTo(await engineLoss(spec, parameters, 36, 3), 5);
      },
    );
  },
);
