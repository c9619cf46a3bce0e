import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type ConfigIssue,
  cohortConfigSchema,
  formatPath,
  loadConfig,
  parseConfig,
  renderConfig,
  SEAL_MAX_COEFF_MODULUS_BITS,
} from '../../src/config/index.ts';
import { ConfigError } from '../../src/errors/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
function file(yaml: string): string {
  const p = join(dir, `c${n++}.yaml`);
  writeFileSync(p, yaml);
  return p;
}

const MINIMAL = 'federation:\n  id: fed-1\n';

/** Runs `fn`, asserts it throws a ConfigError, returns it. */
function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

const issuesOf = (err: ConfigError): ConfigIssue[] => err.details['issues'] as ConfigIssue[];

describe('loadConfig', () => {
  it('fills every default from a minimal file', () => {
    const cfg = loadConfig(file(MINIMAL), { env: {} });
    expect(renderConfig(cfg)).toEqual({
      federation: { id: 'fed-1', mode: 'he' },
      crypto: {
        ckks: { polyModulusDegree: 8192, coeffModulus: [60, 40, 60], scaleBits: 16, exactBits: 42 },
        signature: { algorithm: 'falcon-512', allowed: ['falcon-512', 'ml-dsa-65'] },
        keys: 'threshold',
        threshold: { rotateEveryRounds: 0, reshareTimeoutMs: 60_000 },
      },
      codec: { bits: 8, clip: 0.05, maxContributors: 32, crcChunkBytes: 16384 },
      nats: { servers: ['nats://127.0.0.1:4222'], maxRetry: 5, timeoutMs: 3000 },
      paths: { dataDir: '.cohort' },
      log: { level: 'info' },
      round: {
        count: 5,
        deadlineMs: 120_000,
        voteTimeoutMs: 60_000,
        heartbeatMs: 1000,
        missedHeartbeats: 5,
        epsilon: 0.25,
        clipMultiplier: 6,
        minContributors: 3,
        maxSiteExamples: 10_000_000,
        weightCapFactor: 4,
        clockSkewMs: 30_000,
        breaker: {
          enabled: true,
          window: 5,
          shrinkAt: 0.2,
          dropOptionalAt: 0.4,
          freezeAt: 0.6,
          coolDownRounds: 3,
          coolDownMs: 60_000,
        },
        tree: { rootFanIn: 1024, fanIn: 64, levelWaitMs: 2000 },
      },
      learning: {
        model: '2nn',
        data: 'mnist',
        initSeed: 1,
        epochs: 1,
        batchSize: 10,
        learningRate: 0.1,
        strategy: 'fedavg',
        engine: 'cpu',
        allowSoftwareGpu: false,
      },
      history: {
        replicas: 1,
        snapshotEvery: 10,
        keepModels: 50,
        leaseMs: 10_000,
        logMaxBytes: 1_073_741_824,
        updateRetentionMs: 2_592_000_000,
      },
    });
  });

  it('accepts the example config', () => {
    const cfg = loadConfig('config/federation.example.yaml', { env: {} });
    expect(cfg.federation.id).toBe('demo-federation');
  });

  it.each([
    [
      'federation:\n  id: f\ncrypto:\n  ckks:\n    coeffModulus: [60, 61, 60]\n',
      'crypto.ckks.coeffModulus[1]: must be ≤ 60',
    ],
    [
      'federation:\n  id: f\ncrypto:\n  ckks:\n    coeffModulus: [60, 19]\n',
      'crypto.ckks.coeffModulus[1]: must be ≥ 20',
    ],
    ['federation:\n  id: f\ncodec:\n  bits: 3\n', 'codec.bits: must be one of 1, 2, 4, 8'],
    ['federation:\n  id: f\ncodec:\n  bitz: 8\n', "codec.bitz: unknown key (did you mean 'bits'?)"],
    ['federation:\n  id: f\ncodec:\n  clip: -1\n', 'codec.clip: must be > 0'],
    ['federation:\n  id: f\ncodec:\n  clip: .inf\n', 'codec.clip: must be a finite number'],
    ['federation:\n  id: f\nnats:\n  timeoutMs: 1.5\n', 'nats.timeoutMs: must be an integer'],
    [
      'federation:\n  id: f\nnats:\n  servers: [nats://a:1, http://b]\n',
      'nats.servers[1]: must be a NATS URL',
    ],
    [
      'federation:\n  id: f\nlearning:\n  model: mlp\n',
      "learning.hidden: model 'mlp' needs its hidden layer widths",
    ],
    [
      'federation:\n  id: f\nlearning:\n  hidden: [10]\n',
      "learning.hidden: only model 'mlp' takes hidden widths, not '2nn'",
    ],
    ['federation:\n  id: f\nhistory:\n  replicas: 0\n', 'history.replicas: must be ≥ 1'],
    ['federation:\n  id: Bad_Id\n', 'federation.id: must be 1-63 characters'],
    ['federation:\n  mode: he\n', 'federation.id: is required'],
    ['federation:\n  id: f\nlog:\n  level: loud\n', "log.level: must be one of 'fatal'"],
    [
      'federation:\n  id: f\ncrypto:\n  ckks:\n    polyModulusDegree: 4096\n',
      'crypto.ckks.coeffModulus: total 160 bits exceeds',
    ],
    [
      'federation:\n  id: f\ncrypto:\n  signature:\n    algorithm: ml-dsa-65\n    allowed: [falcon-512]\n',
      "crypto.signature.algorithm: 'ml-dsa-65' is not in crypto.signature.allowed",
    ],
    [
      'federation:\n  id: f\ncodec:\n  maxContributors: 65535\ncrypto:\n  ckks:\n    exactBits: 20\n    scaleBits: 21\n',
      'codec.maxContributors:',
    ],
    [
      // The sum of 1,000 ciphertexts is too noisy at the default scale 2^16 (measured σ ≈ 0.10).
      'federation:\n  id: f\ncodec:\n  maxContributors: 1000\n',
      'crypto.ckks.scaleBits: a sum of 1000 ciphertexts (codec.maxContributors) decrypts with per-slot error σ ≈ 0.101 at scale 2^16',
    ],
  ])('names the field path (%#)', (yaml, expected) => {
    const err = configError(() => loadConfig(file(yaml), { env: {} }));
    expect(err.code).toBe('CONFIG_INVALID');
    expect(err.message).toContain(expected);
    const path = expected.slice(0, expected.indexOf(':'));
    expect(err.details['path']).toBe(path);
    expect(issuesOf(err).map((i) => i.path)).toEqual([path]);
  });

  it('collects every issue, each on its own line', () => {
    const err = configError(() =>
      loadConfig(
        file(
          'federation:\n  id: f\ncrypto:\n  ckks:\n    coeffModulus: [60, 70]\ncodec:\n  bits: 3\n  bitz: 1\n',
        ),
        {
          env: {},
        },
      ),
    );
    const lines = err.message.split('\n');
    expect(lines).toHaveLength(4);
    expect(lines.slice(1).map((l) => l.trim())).toEqual([
      'crypto.ckks.coeffModulus[1]: must be ≤ 60',
      'codec.bits: must be one of 1, 2, 4, 8, got 3',
      "codec.bitz: unknown key (did you mean 'bits'?)",
    ]);
    expect(issuesOf(err)).toHaveLength(3);
    expect(err.details['file']).toContain('.yaml');
  });

  it('checks the SEAL security limit for each degree', () => {
    for (const [degree, limit] of Object.entries(SEAL_MAX_COEFF_MODULUS_BITS)) {
      const primes = [...Array(Math.floor(limit / 60)).fill(60), limit % 60].filter((b) => b >= 20);
      const sum = primes.reduce((a, b) => a + b, 0);
      const base = {
        federation: { id: 'f' },
        crypto: { ckks: { polyModulusDegree: Number(degree), coeffModulus: primes } },
      };
      if (sum <= limit) expect(() => parseConfig(base)).not.toThrow();
      const over = structuredClone(base);
      over.crypto.ckks.coeffModulus = [...primes, 60];
      expect(() => parseConfig(over)).toThrow(/crypto\.ckks\.coeffModulus: total/);
    }
  });

  it('applies COHORT__ environment overrides, parsed as YAML scalars', () => {
    const cfg = loadConfig(file(MINIMAL), {
      env: {
        COHORT__NATS__TIMEOUT_MS: '5000',
        COHORT__CODEC__BITS: '4',
        COHORT__CRYPTO__CKKS__COEFF_MODULUS__1: '50',
        COHORT__NATS__SERVERS: '[nats://a:4222, nats://b:4222]',
        COHORT__FEDERATION__ID: '123',
        UNRELATED: 'x',
      },
    });
    expect(cfg.nats.timeoutMs).toBe(5000);
    expect(cfg.codec.bits).toBe(4);
    expect(cfg.crypto.ckks.coeffModulus).toEqual([60, 50, 60]);
    expect(cfg.nats.servers).toEqual(['nats://a:4222', 'nats://b:4222']);
    expect(cfg.federation.id).toBe('123'); // string fields keep the raw text
  });

  it('gives flags precedence over env over the file', () => {
    const p = file('federation:\n  id: f\nnats:\n  timeoutMs: 100\n  maxRetry: 1\ncodec:\n  clip: 0.5\n');
    const cfg = loadConfig(p, {
      env: { COHORT__NATS__TIMEOUT_MS: '200', COHORT__NATS__MAX_RETRY: '2' },
      overrides: { 'nats.timeoutMs': '300', 'crypto.ckks.coeffModulus[0]': 50 },
    });
    expect(cfg.nats.timeoutMs).toBe(300);
    expect(cfg.nats.maxRetry).toBe(2);
    expect(cfg.codec.clip).toBe(0.5);
    expect(cfg.crypto.ckks.coeffModulus).toEqual([50, 40, 60]);
  });

  it('reports an override of an unknown field with its source', () => {
    const err = configError(() =>
      loadConfig(file(MINIMAL), { env: { COHORT__CODEC__BITZ: '1' }, overrides: { 'nats.timeout': 5 } }),
    );
    expect(err.code).toBe('CONFIG_INVALID');
    expect(err.message).toContain(
      "codec.BITZ: unknown key (did you mean 'bits'?), from environment variable COHORT__CODEC__BITZ",
    );
    expect(err.message).toContain('nats.timeout: unknown key');
    expect(err.message).toContain('from override nats.timeout');
  });

  it('validates overridden values like file values', () => {
    const err = configError(() => loadConfig(file(MINIMAL), { env: { COHORT__CODEC__BITS: '3' } }));
    expect(err.message).toContain('codec.bits: must be one of 1, 2, 4, 8, got 3');
  });

  it('returns a deeply frozen config', () => {
    const cfg = loadConfig(file(MINIMAL), { env: {} });
    expect(Object.isFrozen(cfg)).toBe(true);
    expect(Object.isFrozen(cfg.crypto.ckks.coeffModulus)).toBe(true);
    expect(() => {
      (cfg.codec as { bits: number }).bits = 1;
    }).toThrow(TypeError);
    expect(() => {
      (cfg.crypto.ckks.coeffModulus as number[]).push(30);
    }).toThrow(TypeError);
    const copy = renderConfig(cfg);
    copy.codec.bits = 1;
    expect(cfg.codec.bits).toBe(8);
  });

  it('throws CONFIG_UNREADABLE for a missing or unreadable file', () => {
    const missing = join(dir, 'missing.yaml');
    const err = configError(() => loadConfig(missing, { env: {} }));
    expect(err.code).toBe('CONFIG_UNREADABLE');
    expect(err.details['file']).toBe(missing);
    expect(err.message).toContain(missing);
    const dirErr = configError(() => loadConfig(dir, { env: {} }));
    expect(dirErr.code).toBe('CONFIG_UNREADABLE');
    if (process.getuid?.() !== 0) {
      const locked = file(MINIMAL);
      chmodSync(locked, 0o000);
      expect(configError(() => loadConfig(locked, { env: {} })).code).toBe('CONFIG_UNREADABLE');
    }
  });

  it('throws CONFIG_INVALID with line information for bad YAML', () => {
    const err = configError(() => loadConfig(file('federation:\n  id: f\ncodec: [1, 2\n'), { env: {} }));
    expect(err.code).toBe('CONFIG_INVALID');
    expect(err.message).toMatch(/YAML syntax error at line \d+, column \d+/);
    const dup = configError(() => loadConfig(file('federation:\n  id: a\n  id: b\n'), { env: {} }));
    expect(dup.message).toContain('YAML syntax error at line 3');
  });

  it('rejects a document that is not a mapping', () => {
    const err = configError(() => loadConfig(file('- 1\n- 2\n'), { env: {} }));
    expect(err.message).toContain('(root): must be a mapping');
  });
});

describe('parseConfig', () => {
  it('validates plain objects with the same messages', () => {
    const err = configError(() => parseConfig({ federation: { id: 'f' }, codec: { bits: 16 }, extra: 1 }));
    expect(err.message).toContain('codec.bits: must be one of 1, 2, 4, 8, got 16');
    expect(err.message).toContain('extra: unknown key');
  });

  it('accepts federation.mode plain, with a robust aggregation rule only there', () => {
    expect(parseConfig({ federation: { id: 'f', mode: 'plain' } }).federation).toEqual({
      id: 'f',
      mode: 'plain',
    });
    const median = parseConfig({
      federation: { id: 'f', mode: 'plain', aggregation: { name: 'median', normBound: 2 } },
    });
    expect(median.federation.aggregation).toEqual({ name: 'median', normBound: 2 });
    const he = configError(() => parseConfig({ federation: { id: 'f', aggregation: { name: 'median' } } }));
    expect(he.message).toContain(
      'federation.aggregation: a robust rule reads every update: it needs federation.mode plain',
    );
    const misspelt = configError(() =>
      parseConfig({
        federation: { id: 'f', mode: 'plain', aggregation: { name: 'trimmed-mean', trim: 0.1 } },
      }),
    );
    expect(misspelt.message).toContain('federation.aggregation');
  });

  it('refuses a robust rule with privacy, and a Multi-Krum the smallest round cannot run', () => {
    const privacy = configError(() =>
      parseConfig({
        federation: { id: 'f', mode: 'plain', aggregation: { name: 'median' } },
        privacy: { epsilon: 8, delta: 1e-5, clipNorm: 1, noiseMultiplier: 1 },
      }),
    );
    expect(privacy.message).toContain("median would drop the sites' shares of the privacy noise");
    const krum = configError(() =>
      parseConfig({
        federation: { id: 'f', mode: 'plain', aggregation: { name: 'multi-krum', byzantine: 1 } },
        round: { minContributors: 4 },
      }),
    );
    expect(krum.message).toContain(
      'federation.aggregation.byzantine: Multi-Krum tolerating 1 needs more than 4 updates a round, round.minContributors is 4',
    );
    const select = configError(() =>
      parseConfig({
        federation: { id: 'f', mode: 'plain', aggregation: { name: 'multi-krum', byzantine: 1, select: 6 } },
        round: { minContributors: 5 },
      }),
    );
    expect(select.message).toContain('federation.aggregation.select: Multi-Krum selects 6 updates');
    const ok = parseConfig({
      federation: { id: 'f', mode: 'plain', aggregation: { name: 'multi-krum', byzantine: 1 } },
      round: { minContributors: 5 },
    });
    expect(ok.federation.aggregation).toEqual({ name: 'multi-krum', byzantine: 1 });
  });

  it('validates the privacy section: a budget and a clip norm, and a noise multiplier or the rounds to calibrate one', () => {
    const ok = parseConfig({
      federation: { id: 'f' },
      privacy: { epsilon: 4, clipNorm: 0.05, plannedRounds: 100 },
    });
    expect(ok.privacy).toEqual({
      mechanism: 'skellam',
      epsilon: 4,
      delta: 1e-5,
      clipNorm: 0.05,
      plannedRounds: 100,
    });
    const err = configError(() =>
      parseConfig({ federation: { id: 'f' }, privacy: { epsilon: -1, clipNorm: 0.05 } }),
    );
    expect(err.message).toContain('privacy.epsilon: ');
    const missing = configError(() =>
      parseConfig({ federation: { id: 'f' }, privacy: { epsilon: 1, clipNorm: 1 } }),
    );
    expect(missing.message).toContain('privacy: needs noiseMultiplier or plannedRounds');
  });

  it('round-trips through renderConfig', () => {
    const cfg = parseConfig({ federation: { id: 'f', mode: 'he' }, nats: { credentials: '/x.creds' } });
    expect(parseConfig(renderConfig(cfg))).toEqual(cfg);
    expect(cohortConfigSchema.safeParse(renderConfig(cfg)).success).toBe(true);
  });
});

describe('formatPath', () => {
  it('uses dots for keys and brackets for indices', () => {
    expect(formatPath(['crypto', 'ckks', 'coeffModulus', 1])).toBe('crypto.ckks.coeffModulus[1]');
    expect(formatPath([])).toBe('(root)');
    expect(formatPath(['a', 'b c'])).toBe('a["b c"]');
  });
});
