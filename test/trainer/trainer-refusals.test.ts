import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initParameters, mlp } from '../../federation/index.ts';
import { InvalidArgumentError } from '../../src/errors/index.ts';
import {
  createExternalTrainer,
  type ExternalTrainerOptions,
  type Standardization,
  TRAINER_PROTOCOL,
  TrainerError,
  type TrainSettings,
} from '../../src/trainer/index.ts';
import { encodeSafetensors, modelTensors } from '../../src/versions/index.ts';
import { rejection } from '../helpers/error-code.ts';
import { tempFolder } from './trainer-fixtures.ts';

// The agent's side of the protocol against a fake trainer (a few lines of node) that answers each
// action with files a test prepared: `<scenario>/<action>.json` becomes result.json,
// `<action>.safetensors` result.safetensors; `<action>.exit` sets the exit code, `<action>.stderr`
// is written to stderr, `<action>.symlink` makes result.json a symbolic link to that path, and
// `<action>.hang` makes it ignore SIGTERM and wait forever with a helper process in its group.

const FAKE_TRAINER = `
import { copyFileSync, existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
const [scenario, requestPath] = process.argv.slice(2);
const request = JSON.parse(readFileSync(requestPath, 'utf8'));
const folder = dirname(requestPath);
const base = join(scenario, request.action);
writeFileSync(join(scenario, request.action + '.request.json'), JSON.stringify(request));
writeFileSync(join(scenario, 'env.json'), JSON.stringify(process.env));
if (existsSync(base + '.stderr')) process.stderr.write(readFileSync(base + '.stderr'));
if (existsSync(base + '.hang')) {
  process.on('SIGTERM', () => {});
  const helper = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  writeFileSync(join(scenario, 'helper.pid'), String(helper.pid));
  setInterval(() => {}, 1000);
} else {
  if (existsSync(base + '.json')) copyFileSync(base + '.json', join(folder, 'result.json'));
  if (existsSync(base + '.symlink')) symlinkSync(readFileSync(base + '.symlink', 'utf8'), join(folder, 'result.json'));
  if (existsSync(base + '.safetensors')) copyFileSync(base + '.safetensors', join(folder, 'result.safetensors'));
  process.exitCode = existsSync(base + '.exit') ? Number(readFileSync(base + '.exit', 'utf8')) : 0;
}
`;

const SPEC = mlp(4, [8], 3);
const INITIAL = initParameters(SPEC, 1);
const TRAINED = INITIAL.map((v, i) => v + 0.01 * ((i % 5) - 2));
const SETTINGS: TrainSettings = {
  round: 2,
  learningRate: 0.1,
  batchSize: 4,
  epochs: 1,
  proximalMu: 0,
  shuffleSeed: 9,
  deadlineUnixMs: 0,
};
const DESCRIBED = { protocol: TRAINER_PROTOCOL, examples: 10, validationExamples: 4, classes: 3 };
const TRAINED_JSON = { protocol: TRAINER_PROTOCOL, examples: 10, meanLoss: 0.5, steps: 3 };
const EVALUATED = {
  protocol: TRAINER_PROTOCOL,
  examples: 4,
  lossSum: 3.2,
  correct: 2,
  confusion: [
    [1, 1, 0],
    [0, 1, 0],
    [1, 0, 0],
  ],
};

let root: string;
let script: string;
let counter = 0;

beforeAll(() => {
  root = tempFolder('trainer-fake');
  script = join(root, 'fake-trainer.mjs');
  writeFileSync(script, FAKE_TRAINER);
});

afterAll(() => {
  if (root !== undefined) rmSync(root, { recursive: true, force: true });
});

type Files = Record<string, string | Uint8Array | object>;

/** A scenario folder holding `files` (objects written as JSON), and a trainer answering from it. */
function scenario(files: Files, options: Partial<ExternalTrainerOptions> = {}) {
  const dir = join(root, `scenario-${++counter}`);
  mkdirSync(dir);
  for (const [name, content] of Object.entries(files)) {
    const bytes =
      content instanceof Uint8Array || typeof content === 'string' ? content : JSON.stringify(content);
    writeFileSync(join(dir, name), bytes);
  }
  const workDir = join(dir, 'work');
  const trainer = createExternalTrainer({
    command: [process.execPath, script, dir],
    workDir,
    timeoutMs: 30_000,
    killGraceMs: 200,
    ...options,
  });
  return { dir, workDir, trainer };
}

const json = (value: object): string => JSON.stringify(value);
const weights = (parameters: Float32Array, spec = SPEC): Uint8Array =>
  encodeSafetensors(modelTensors(spec, parameters));

async function trainError(
  files: Files,
  options: Partial<ExternalTrainerOptions> = {},
): Promise<TrainerError> {
  const { trainer } = scenario({ 'describe.json': DESCRIBED, ...files }, options);
  return rejection(trainer.train(SPEC, INITIAL, SETTINGS), TrainerError);
}

describe('external trainer: the protocol as the agent speaks it', () => {
  it('writes the request and the model, and takes back checked weights and counts', async () => {
    const { dir, workDir, trainer } = scenario({
      'describe.json': DESCRIBED,
      'train.json': TRAINED_JSON,
      'train.safetensors': weights(TRAINED),
      'evaluate.json': EVALUATED,
    });
    const result = await trainer.train(SPEC, INITIAL, SETTINGS);
    expect(result).toEqual({ examples: 10, meanLoss: 0.5, steps: 3, parameters: TRAINED });
    expect(trainer.description).toEqual({ examples: 10, validationExamples: 4, classes: 3 });

    const request = JSON.parse(readFileSync(join(dir, 'train.request.json'), 'utf8'));
    expect(request).toEqual({
      protocol: TRAINER_PROTOCOL,
      action: 'train',
      model: JSON.parse(JSON.stringify(SPEC)),
      settings: SETTINGS,
      input: 'model.safetensors',
      output: 'result.safetensors',
      result: 'result.json',
    });
    expect(JSON.parse(readFileSync(join(dir, 'describe.request.json'), 'utf8'))).toEqual({
      protocol: TRAINER_PROTOCOL,
      action: 'describe',
      result: 'result.json',
    });

    const evaluation = await trainer.evaluate(SPEC, TRAINED);
    expect(evaluation).toEqual({ examples: 4, lossSum: 3.2, correct: 2, confusion: EVALUATED.confusion });
    expect(readdirSync(workDir)).toEqual([]);
  });

  it('passes only the allowed environment, plus the configured variables', async () => {
    process.env['COHORT_TEST_SECRET'] = 'do-not-leak';
    try {
      const { dir, trainer } = scenario({ 'describe.json': DESCRIBED }, { env: { TRAINER_THREADS: '2' } });
      await trainer.describe();
      const env = JSON.parse(readFileSync(join(dir, 'env.json'), 'utf8'));
      expect(env['TRAINER_THREADS']).toBe('2');
      expect(env['COHORT_TEST_SECRET']).toBeUndefined();
      expect(env['PATH']).toBe(process.env['PATH']);
    } finally {
      delete process.env['COHORT_TEST_SECRET'];
    }
  });

  it('runs concurrent calls one at a time', async () => {
    const { trainer } = scenario({
      'describe.json': DESCRIBED,
      'train.json': TRAINED_JSON,
      'train.safetensors': weights(TRAINED),
      'evaluate.json': EVALUATED,
    });
    const [described, trained, evaluated] = await Promise.all([
      trainer.describe(),
      trainer.train(SPEC, INITIAL, SETTINGS),
      trainer.evaluate(SPEC, INITIAL),
    ]);
    expect(described.examples).toBe(10);
    expect(trained.parameters).toEqual(TRAINED);
    expect(evaluated.correct).toBe(2);
  });
});

describe('external trainer: refusals, each naming the file and the field', () => {
  it('refuses an example count that is not a positive integer', async () => {
    const err = await trainError({
      'train.json': { ...TRAINED_JSON, examples: -3 },
      'train.safetensors': weights(TRAINED),
    });
    expect(err.code).toBe('TRAINER_RESULT_INVALID');
    expect(err.message).toBe('result.json: examples is -3, must be a positive integer');
    expect(err.details['field']).toBe('examples');
  });

  it('refuses an example count other than the one describe reported', async () => {
    const err = await trainError({
      'train.json': { ...TRAINED_JSON, examples: 7 },
      'train.safetensors': weights(TRAINED),
    });
    expect(err.code).toBe('TRAINER_EXAMPLES_CHANGED');
    expect(err.message).toContain('result.json: examples is 7, but describe reported examples 10');
  });

  it('refuses a describe result with a bad field', async () => {
    const { trainer } = scenario({ 'describe.json': { ...DESCRIBED, validationExamples: 1.5 } });
    const err = await rejection(trainer.describe(), TrainerError);
    expect(err.message).toBe('result.json: validationExamples is 1.5, must be a non-negative integer');
  });

  it('refuses a wrong protocol, a missing field, a string number and NaN (not JSON)', async () => {
    const cases: [string, string][] = [
      [
        json({ ...TRAINED_JSON, protocol: 'cohort-trainer/0' }),
        'result.json: protocol is "cohort-trainer/0", must be',
      ],
      [
        json({ ...TRAINED_JSON, steps: undefined }),
        'result.json: steps is missing, must be a non-negative integer',
      ],
      [
        json({ ...TRAINED_JSON, meanLoss: '0.5' }),
        'result.json: meanLoss is "0.5", must be a finite number ≥ 0',
      ],
      [
        `{"protocol":"${TRAINER_PROTOCOL}","examples":10,"meanLoss":1e400,"steps":1}`,
        'result.json: meanLoss is Infinity, must be a finite number ≥ 0',
      ],
      [
        `{"protocol":"${TRAINER_PROTOCOL}","examples":10,"meanLoss":NaN,"steps":1}`,
        'result.json is not UTF-8 JSON',
      ],
      ['[1, 2]', 'result.json must hold a JSON object'],
    ];
    for (const [body, message] of cases) {
      const err = await trainError({ 'train.json': body, 'train.safetensors': weights(TRAINED) });
      expect(err.code, message).toBe('TRAINER_RESULT_INVALID');
      expect(err.message).toContain(message);
    }
  });

  it('refuses a NaN weight', async () => {
    const bytes = weights(TRAINED);
    const headerLength = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    new DataView(bytes.buffer).setFloat32(8 + headerLength + 4 * 5, Number.NaN, true);
    const err = await trainError({ 'train.json': TRAINED_JSON, 'train.safetensors': bytes });
    expect(err.code).toBe('TRAINER_WEIGHTS_INVALID');
    expect(err.message).toMatch(/^result\.safetensors: tensor "layers\.0\.weight": data\[5\] is NaN/);
  });

  it('refuses a tensor of the wrong shape', async () => {
    const other = mlp(4, [7], 3);
    const err = await trainError({
      'train.json': TRAINED_JSON,
      'train.safetensors': weights(initParameters(other, 2), other),
    });
    expect(err.code).toBe('TRAINER_WEIGHTS_INVALID');
    expect(err.message).toMatch(/^result\.safetensors: tensor "layers\.0\.weight" has shape \[7, 4\]/);
  });

  it('refuses bytes that are not safetensors', async () => {
    const err = await trainError({
      'train.json': TRAINED_JSON,
      'train.safetensors': 'not a safetensors file',
    });
    expect(err.code).toBe('TRAINER_WEIGHTS_INVALID');
    expect(err.message).toMatch(/^result\.safetensors: safetensors header length/);
  });

  it('refuses a missing result.json or result.safetensors', async () => {
    const noJson = await trainError({ 'train.safetensors': weights(TRAINED) });
    expect(noJson.code).toBe('TRAINER_RESULT_MISSING');
    expect(noJson.message).toBe('result.json is missing: the trainer exited 0 without writing it');
    const noWeights = await trainError({ 'train.json': TRAINED_JSON });
    expect(noWeights.code).toBe('TRAINER_RESULT_MISSING');
    expect(noWeights.message).toContain('result.safetensors is missing');
  });

  it('refuses a result.json over the size limit, and one that is a symbolic link', async () => {
    const big = await trainError(
      { 'train.json': TRAINED_JSON, 'train.safetensors': weights(TRAINED) },
      { maxResultJsonBytes: 16 },
    );
    expect(big.code).toBe('TRAINER_RESULT_TOO_LARGE');
    expect(big.message).toMatch(/^result\.json is \d+ bytes; the agent accepts at most 16$/);
    const target = join(root, 'elsewhere.json');
    writeFileSync(target, JSON.stringify(TRAINED_JSON));
    const link = await trainError({ 'train.symlink': target, 'train.safetensors': weights(TRAINED) });
    expect(link.code).toBe('TRAINER_RESULT_INVALID');
    expect(link.message).toBe('result.json is a symbolic link; it must be a regular file');
  });

  it('reports a nonzero exit with its code and the end of stderr', async () => {
    const err = await trainError({
      'train.exit': '3',
      'train.stderr': `${'x'.repeat(10_000)}\nValueError: boom\n`,
    });
    expect(err.code).toBe('TRAINER_EXIT');
    expect(err.message).toMatch(/^trainer train \(round 2\) exited with code 3; stderr \(last 4096 bytes\):/);
    expect(err.message).toContain('ValueError: boom');
    expect(err.details['exitCode']).toBe(3);
    expect((err.details['stderrTail'] as string).length).toBeLessThanOrEqual(4096);
  });

  it('kills a trainer past its timeout', async () => {
    const err = await trainError({ 'train.hang': '' }, { timeoutMs: 300 });
    expect(err.code).toBe('TRAINER_TIMEOUT');
    expect(err.message).toContain('ran past its 300 ms limit; its process group was killed');
  });

  it('kills the whole process group on abort, helpers included', async () => {
    const { dir, trainer } = scenario({ 'describe.json': DESCRIBED, 'train.hang': '' });
    const controller = new AbortController();
    const call = trainer.train(SPEC, INITIAL, SETTINGS, controller.signal);
    const pidFile = join(dir, 'helper.pid');
    while (!existsSync(pidFile) || readFileSync(pidFile, 'utf8') === '') {
      await new Promise((r) => setTimeout(r, 20));
    }
    const helper = Number(readFileSync(pidFile, 'utf8'));
    controller.abort(new Error('round cancelled'));
    const err = await rejection(call, TrainerError);
    expect(err.code).toBe('TRAINER_ABORTED');
    for (let i = 0; i < 250 && alive(helper); i++) await new Promise((r) => setTimeout(r, 20));
    expect(alive(helper)).toBe(false);
  });

  it('refuses an evaluation whose confusion matrix does not fit', async () => {
    const cases: [object, string][] = [
      [
        { ...EVALUATED, confusion: [[4]] },
        'result.json: confusion is an array of 1 rows, must be 3 rows of 3 counts',
      ],
      [
        {
          ...EVALUATED,
          confusion: [
            [1, 1, 0],
            [0, 1],
            [1, 0, 0],
          ],
        },
        'result.json: confusion[1] is [0,1], must be an array of 3 counts',
      ],
      [
        {
          ...EVALUATED,
          confusion: [
            [1, 1, 0],
            [0, -1, 0],
            [1, 0, 0],
          ],
        },
        'result.json: confusion[1][1] is -1, must be a non-negative integer',
      ],
      [
        {
          ...EVALUATED,
          confusion: [
            [1, 1, 0],
            [0, 1, 0],
            [1, 0, 1],
          ],
        },
        'result.json: confusion sums to 5, must sum to examples (4)',
      ],
      [{ ...EVALUATED, correct: 3 }, 'result.json: correct is 3, must be the trace of confusion (2)'],
      [
        { ...EVALUATED, examples: 5 },
        'result.json: examples is 5, but describe reported validationExamples 4',
      ],
    ];
    for (const [json, message] of cases) {
      const { trainer } = scenario({ 'describe.json': DESCRIBED, 'evaluate.json': json });
      const err = await rejection(trainer.evaluate(SPEC, INITIAL), TrainerError);
      expect(err.message, message).toContain(message);
    }
  });

  it('refuses to evaluate without validation rows, and labels beyond the model', async () => {
    const none = scenario({ 'describe.json': { ...DESCRIBED, validationExamples: 0 } });
    expect((await rejection(none.trainer.evaluate(SPEC, INITIAL), TrainerError)).code).toBe(
      'TRAINER_NO_VALIDATION',
    );
    const wide = scenario({ 'describe.json': { ...DESCRIBED, classes: 5 } });
    const err = await rejection(wide.trainer.train(SPEC, INITIAL, SETTINGS), TrainerError);
    expect(err.code).toBe('TRAINER_CLASSES_MISMATCH');
    expect(err.message).toBe("the trainer's labels range over 5 classes, but model mlp outputs 3");
  });

  it('keeps failed call folders for debugging, at most keepFailedCalls of them', async () => {
    const { workDir, trainer } = scenario(
      { 'describe.json': DESCRIBED, 'train.exit': '1' },
      { keepFailedCalls: 2 },
    );
    await trainer.describe();
    for (let i = 0; i < 4; i++) await rejection(trainer.train(SPEC, INITIAL, SETTINGS), TrainerError);
    const kept = readdirSync(workDir);
    expect(kept).toHaveLength(2);
    for (const name of kept) {
      expect(name).toMatch(/^call-\d{15}-\d{6}-[0-9a-f]{8}-train$/);
      expect(readdirSync(join(workDir, name)).sort()).toEqual(['model.safetensors', 'request.json']);
    }
  });

  it('fails to start a missing program with TRAINER_SPAWN_FAILED', async () => {
    const trainer = createExternalTrainer({
      command: [join(root, 'no-such-trainer')],
      workDir: join(root, 'spawn-work'),
      timeoutMs: 10_000,
    });
    const err = await rejection(trainer.describe(), TrainerError);
    expect(err.code).toBe('TRAINER_SPAWN_FAILED');
    expect(err.message).toContain('no-such-trainer');
  });
});

describe('external trainer: arguments', () => {
  it('refuses bad options, naming them', () => {
    const workDir = join(root, 'options-work');
    const make = (o: Partial<ExternalTrainerOptions>) => () =>
      createExternalTrainer({ command: ['x'], workDir, timeoutMs: 1000, ...o });
    expect(make({ command: [] })).toThrow(/options\.command must be a non-empty array/);
    expect(make({ command: ['python', ''] })).toThrow(/options\.command\[1\] must be a non-empty string/);
    expect(make({ timeoutMs: 0 })).toThrow(/options\.timeoutMs must be an integer/);
    expect(make({ keepFailedCalls: -1 })).toThrow(/options\.keepFailedCalls/);
    expect(make({ env: { A: 1 as unknown as string } })).toThrow(/options\.env\["A"\]/);
    expect(make({ timeoutMs: 0 })).toThrow(InvalidArgumentError);
  });

  it('creates workDir private, and refuses one that others can read', () => {
    const created = join(root, 'fresh', 'work');
    createExternalTrainer({ command: ['x'], workDir: created, timeoutMs: 1000 });
    const open = join(root, 'open-work');
    mkdirSync(open);
    chmodSync(open, 0o755);
    let err: unknown;
    try {
      createExternalTrainer({ command: ['x'], workDir: open, timeoutMs: 1000 });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TrainerError);
    expect((err as TrainerError).code).toBe('TRAINER_WORKDIR');
    expect((err as TrainerError).message).toContain('has mode 0755');
  });

  it('refuses bad settings and models before starting anything', async () => {
    const { dir, trainer } = scenario({ 'describe.json': DESCRIBED });
    await expect(trainer.train(SPEC, INITIAL, { ...SETTINGS, batchSize: 0 })).rejects.toThrow(
      /settings\.batchSize/,
    );
    await expect(trainer.train(SPEC, INITIAL, { ...SETTINGS, learningRate: Number.NaN })).rejects.toThrow(
      /settings\.learningRate must be a finite number > 0/,
    );
    await rejection(trainer.train(SPEC, INITIAL.subarray(1), SETTINGS), InvalidArgumentError);
    const nan = INITIAL.slice();
    nan[3] = Number.NaN;
    await expect(trainer.evaluate(SPEC, nan)).rejects.toThrow(/data\[3\] is NaN/);
    expect(existsSync(join(dir, 'env.json'))).toBe(false);
  });
});

describe('external trainer: statistics and standardization', () => {
  const FEATURED = { ...DESCRIBED, features: 4 };
  const STATISTICS = {
    protocol: TRAINER_PROTOCOL,
    rows: '10',
    positive: ['100', '0', '5', '7'],
    negative: ['0', '40', '5', '0'],
    squares: ['1000', '160', '3', '5'],
  };
  const STANDARDIZATION = { mean: [0.5, -1, 0, 2], std: [1, 0.25, 3, 1e-3] };

  /** What statistics rejects with, answering describe with `described` and statistics with `result`. */
  async function statisticsError(result: object, described: object = FEATURED) {
    const { trainer } = scenario({ 'describe.json': described, 'statistics.json': result });
    return rejection(trainer.statistics(), TrainerError);
  }

  it('reads the exact sums from decimal strings, past 2^53', async () => {
    const big = ((1n << 100n) + 1n).toString();
    const { dir, workDir, trainer } = scenario({
      'describe.json': FEATURED,
      'statistics.json': { ...STATISTICS, squares: [big, '160', '3', '5'] },
    });
    const totals = await trainer.statistics();
    expect(totals).toEqual({
      rows: 10n,
      positive: [100n, 0n, 5n, 7n],
      negative: [0n, 40n, 5n, 0n],
      squares: [(1n << 100n) + 1n, 160n, 3n, 5n],
    });
    expect(trainer.description).toEqual({ examples: 10, validationExamples: 4, classes: 3, features: 4 });
    expect(JSON.parse(readFileSync(join(dir, 'statistics.request.json'), 'utf8'))).toEqual({
      protocol: TRAINER_PROTOCOL,
      action: 'statistics',
      result: 'result.json',
    });
    expect(readdirSync(workDir)).toEqual([]);
  });

  it('refuses values that are not strings of decimal digits below 2^128', async () => {
    const cases: [unknown, string][] = [
      ['12a', 'result.json: positive[1] is "12a", must be a string of 1 to 80 decimal digits'],
      ['-5', 'result.json: positive[1] is "-5", must be a string of 1 to 80 decimal digits'],
      ['1e3', 'result.json: positive[1] is "1e3", must be a string of 1 to 80 decimal digits'],
      ['', 'result.json: positive[1] is "", must be a string of 1 to 80 decimal digits'],
      [' 7', 'result.json: positive[1] is " 7", must be a string of 1 to 80 decimal digits'],
      [7, 'result.json: positive[1] is 7, must be a string of 1 to 80 decimal digits'],
      [null, 'result.json: positive[1] is null, must be a string of 1 to 80 decimal digits'],
      ['1'.repeat(81), 'must be a string of 1 to 80 decimal digits'],
      [
        (1n << 128n).toString(),
        'result.json: positive[1] is "340282366920938463463374607431768211456", must be below 2^128',
      ],
    ];
    for (const [value, message] of cases) {
      const err = await statisticsError({ ...STATISTICS, positive: ['100', value, '5', '7'] });
      expect(err.code, message).toBe('TRAINER_RESULT_INVALID');
      expect(err.message).toContain(message);
      expect(err.details['field']).toBe('positive[1]');
    }
    const rows = await statisticsError({ ...STATISTICS, rows: 10 });
    expect(rows.message).toBe('result.json: rows is 10, must be a string of 1 to 80 decimal digits');
  });

  it('refuses sums no rows can have: a negative variance, a sum beyond the squares', async () => {
    const variance = await statisticsError({ ...STATISTICS, squares: ['999', '160', '3', '5'] });
    expect(variance.code).toBe('TRAINER_RESULT_INVALID');
    expect(variance.details['field']).toBe('squares[0]');
    expect(variance.message).toContain('result.json: squares[0] is "999", must be at least');
    expect(variance.message).toContain('negative variance');
    const cancelled = await statisticsError({
      ...STATISTICS,
      positive: ['100', '0', '5', '7'],
      negative: ['100', '40', '5', '0'],
      squares: ['0', '160', '3', '5'],
    });
    expect(cancelled.code).toBe('TRAINER_RESULT_INVALID');
    expect(cancelled.details['field']).toBe('positive[0]');
  });

  it("refuses another row count, and arrays of another length than describe's features", async () => {
    const rows = await statisticsError({ ...STATISTICS, rows: '11' });
    expect(rows.code).toBe('TRAINER_EXAMPLES_CHANGED');
    expect(rows.message).toContain('result.json: rows is 11, but describe reported examples 10');
    const short = await statisticsError({ ...STATISTICS, negative: ['0', '40', '5'] });
    expect(short.code).toBe('TRAINER_RESULT_INVALID');
    expect(short.details['field']).toBe('negative');
    expect(short.message).toBe(
      'result.json: negative is an array of 3, must be an array of 4 decimal strings (one per feature the trainer described)',
    );
    const missing = await statisticsError({ ...STATISTICS, squares: undefined });
    expect(missing.message).toContain('result.json: squares is missing, must be an array of 4');
    const narrower = await statisticsError(STATISTICS, { ...DESCRIBED, features: 3 });
    expect(narrower.details['field']).toBe('positive');
  });

  it('refuses statistics when describe reported no features, without starting a statistics call', async () => {
    const { dir, trainer } = scenario({ 'describe.json': DESCRIBED, 'statistics.json': STATISTICS });
    const err = await rejection(trainer.statistics(), TrainerError);
    expect(err.code).toBe('TRAINER_NO_FEATURES');
    expect(err.message).toContain('describe reported no features');
    expect(existsSync(join(dir, 'statistics.request.json'))).toBe(false);
  });

  it('refuses a describe result with a bad features field', async () => {
    for (const features of [0, 1.5, '4', 2 ** 24 + 1]) {
      const { trainer } = scenario({ 'describe.json': { ...DESCRIBED, features } });
      const err = await rejection(trainer.describe(), TrainerError);
      expect(err.code).toBe('TRAINER_RESULT_INVALID');
      expect(err.message).toContain('result.json: features is');
      expect(err.message).toContain('must be an integer in [1, 16777216]');
    }
  });

  it('writes the standardization into the train and evaluate requests', async () => {
    const { dir, trainer } = scenario({
      'describe.json': FEATURED,
      'train.json': TRAINED_JSON,
      'train.safetensors': weights(TRAINED),
      'evaluate.json': EVALUATED,
    });
    await trainer.train(SPEC, INITIAL, { ...SETTINGS, standardization: STANDARDIZATION });
    const train = JSON.parse(readFileSync(join(dir, 'train.request.json'), 'utf8'));
    expect(train.settings).toEqual({ ...SETTINGS, standardization: STANDARDIZATION });
    await trainer.evaluate(SPEC, TRAINED, undefined, STANDARDIZATION);
    const evaluate = JSON.parse(readFileSync(join(dir, 'evaluate.request.json'), 'utf8'));
    expect(evaluate.standardization).toEqual(STANDARDIZATION);
    await trainer.evaluate(SPEC, TRAINED);
    const plain = JSON.parse(readFileSync(join(dir, 'evaluate.request.json'), 'utf8'));
    expect('standardization' in plain).toBe(false);
  });

  it('refuses a bad standardization before any process starts', async () => {
    const { dir, trainer } = scenario({ 'describe.json': FEATURED });
    const holed: number[] = []; // [0, <hole>, 0, 0]: a hole is refused like a missing number
    holed[0] = 0;
    holed[2] = 0;
    holed[3] = 0;
    const cases: [unknown, RegExp][] = [
      [
        { ...STANDARDIZATION, mean: [0, Number.NaN, 0, 0] },
        /standardization\.mean\[1\] must be a finite number, got NaN/,
      ],
      [
        { ...STANDARDIZATION, std: [1, 0, 1, 1] },
        /standardization\.std\[1\] must be a finite number > 0, got 0/,
      ],
      [
        { ...STANDARDIZATION, std: [1, 1, -2, 1] },
        /standardization\.std\[2\] must be a finite number > 0, got -2/,
      ],
      [
        { ...STANDARDIZATION, std: [1, 1, Infinity, 1] },
        /standardization\.std\[2\] must be a finite number > 0/,
      ],
      [
        { ...STANDARDIZATION, std: [1, 1, 1] },
        /standardization\.std has 3 values, .*standardization\.mean has 4/,
      ],
      [{ mean: [], std: [] }, /standardization\.mean is an array of 0, must be an array of 1 to/],
      [{ mean: 'x', std: [1] }, /standardization\.mean is string, must be an array/],
      [
        { mean: holed, std: [1, 1, 1, 1] },
        /standardization\.mean\[1\] must be a finite number, got undefined/,
      ],
      [null, /standardization must be an object/],
    ];
    for (const [value, message] of cases) {
      const standardization = value as Standardization;
      const train = await rejection(
        trainer.train(SPEC, INITIAL, { ...SETTINGS, standardization }),
        InvalidArgumentError,
      );
      expect(train.message).toMatch(new RegExp(`^settings\\.${message.source}`));
      const evaluate = await rejection(
        trainer.evaluate(SPEC, INITIAL, undefined, standardization),
        InvalidArgumentError,
      );
      expect(evaluate.message).toMatch(new RegExp(`^${message.source}`));
    }
    expect(existsSync(join(dir, 'env.json'))).toBe(false);

    // Once describe has reported 4 features, a standardization of 5 is refused too.
    await trainer.describe();
    const five = { mean: [0, 0, 0, 0, 0], std: [1, 1, 1, 1, 1] };
    const wide = await rejection(
      trainer.train(SPEC, INITIAL, { ...SETTINGS, standardization: five }),
      InvalidArgumentError,
    );
    expect(wide.message).toBe(
      "settings.standardization.mean has 5 values, but the trainer's rows have 4 features",
    );
    await rejection(trainer.evaluate(SPEC, INITIAL, undefined, five), InvalidArgumentError);
    expect(existsSync(join(dir, 'train.request.json'))).toBe(false);
    expect(existsSync(join(dir, 'evaluate.request.json'))).toBe(false);
  });

  it('checks the standardization against features when describe runs first inside the call', async () => {
    const { dir, trainer } = scenario({ 'describe.json': FEATURED });
    const three = { mean: [0, 0, 0], std: [1, 1, 1] };
    const err = await rejection(
      trainer.train(SPEC, INITIAL, { ...SETTINGS, standardization: three }),
      InvalidArgumentError,
    );
    expect(err.message).toContain('has 3 values, but the trainer');
    expect(existsSync(join(dir, 'describe.request.json'))).toBe(true);
    expect(existsSync(join(dir, 'train.request.json'))).toBe(false);
  });
});

/** Whether `pid` is a live process (a zombie awaiting its reaper counts as dead). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}
