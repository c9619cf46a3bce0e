import { z } from 'zod';
// The noise rule alone, not crypto/ckks's index: loading the configuration must not load SEAL.
import { LANE_SUM_TOLERANCE, minScaleBits, slotNoiseSigma } from '../../crypto/ckks/ckks-noise.ts';
import { LOG_LEVELS } from '../log/index.ts';
import { plaintextAdminProblem } from './admin-listen.ts';
import { checkAggregation, robustRuleSchema } from './aggregation-schema.ts';
import { dataContractSchema } from './data-contract-schema.ts';
import { layersSchema, MODEL_KINDS } from './model-schema.ts';
import { privacySchema } from './privacy-schema.ts';
import { POLY_MODULUS_DEGREES, SEAL_MAX_COEFF_MODULUS_BITS } from './seal-limits.ts';

/** Signature algorithms a federation may use. */
export const SIGNATURE_ALGORITHMS = ['falcon-512', 'ml-dsa-65'] as const;

/** Quantization widths the codec supports. */
export const CODEC_BITS = [1, 2, 4, 8] as const;

/** Pattern a federation id must match (it becomes a NATS subject token). */
export const FEDERATION_ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;

const federationSchema = z.strictObject({
  id: z.string().regex(FEDERATION_ID_PATTERN, {
    error: 'must be 1-63 characters of a-z, 0-9 and "-", starting with a letter or digit',
  }),
  /**
   * `he`: CKKS-encrypted updates, summed unseen. `plain`: signed, quantized plaintext updates that
   * the aggregators and the coordinator read, for federations that trust them; it allows a robust
   * `aggregation` rule (docs/security.md).
   */
  mode: z.enum(['he', 'plain']).default('he'),
  /** `plain` mode: the robust rule the coordinator aggregates with; absent, FedAvg of the tree's sum. */
  aggregation: robustRuleSchema.optional(),
});

const ckksSchema = z
  .strictObject({
    polyModulusDegree: z.literal(POLY_MODULUS_DEGREES).default(8192),
    coeffModulus: z
      .array(z.int().min(20).max(60))
      .min(1)
      .default(() => [60, 40, 60]),
    scaleBits: z.int().min(10).max(40).default(16),
    exactBits: z.int().min(20).max(50).default(42),
  })
  .superRefine((ckks, ctx) => {
    // zod runs refinements after non-fatal child issues too: only judge well-formed values.
    const limit = SEAL_MAX_COEFF_MODULUS_BITS[ckks.polyModulusDegree] as number | undefined;
    if (
      limit === undefined ||
      !Array.isArray(ckks.coeffModulus) ||
      !ckks.coeffModulus.every((b) => Number.isInteger(b))
    )
      return;
    const total = ckks.coeffModulus.reduce((a, b) => a + b, 0);
    if (total > limit) {
      ctx.addIssue({
        code: 'custom',
        path: ['coeffModulus'],
        message: `total ${total} bits exceeds the 128-bit security limit of ${limit} bits for polyModulusDegree ${ckks.polyModulusDegree}`,
      });
    }
  });

const signatureAlgorithmSchema = z.enum(SIGNATURE_ALGORITHMS);

const signatureSchema = z
  .strictObject({
    algorithm: signatureAlgorithmSchema.default('falcon-512'),
    allowed: z
      .array(signatureAlgorithmSchema)
      .min(1)
      .default(() => [...SIGNATURE_ALGORITHMS]),
  })
  .superRefine((sig, ctx) => {
    if (!SIGNATURE_ALGORITHMS.includes(sig.algorithm) || !Array.isArray(sig.allowed)) return;
    if (!sig.allowed.includes(sig.algorithm)) {
      ctx.addIssue({
        code: 'custom',
        path: ['algorithm'],
        message: `'${sig.algorithm}' is not in crypto.signature.allowed (${sig.allowed.join(', ')})`,
      });
    }
  });

/**
 * Who holds the key of `he` mode. `shared`: one CKKS secret key, made by the key site and wrapped
 * to every site (`crypto.ckks` sets its parameters). `threshold`: no site holds the key; each site
 * encrypts under a secret of its own and any `threshold` sites decrypt an aggregate together
 * (docs/threshold-ckks.md), with their own fixed parameters (N = 8192, two 60-bit limbs).
 */
export const KEY_SCHEMES = ['shared', 'threshold'] as const;

/**
 * What `crypto.keys` is when a configuration does not say: threshold, so that no site holds a key
 * that reads another's update; a round then commits only while t key holders answer.
 */
export const DEFAULT_KEY_SCHEME: (typeof KEY_SCHEMES)[number] = 'threshold';

const thresholdSchema = z.strictObject({
  /**
   * Sites needed to decrypt an aggregate (t); default ⌈2n/3⌉ of the n sites, at least
   * `round.minContributors`.
   */
  sites: z.int().min(1).max(1024).optional(),
  /**
   * The key holders (a decryption committee): the sites every site deals a share of its secret to,
   * `sites` (t) of which decrypt an aggregate together. Unset: every site holds, so dealing is
   * all-to-all (n² shares a re-sharing); named holders keep it linear in the number of sites
   * (n × holders). No coalition short of t holders can read an update; the holders must be among
   * `members.sites` and at least t.
   */
  holders: z
    .array(z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, { error: 'must be a site id' }))
    .min(1)
    .max(1024)
    .refine((ids) => new Set(ids).size === ids.length, { error: 'lists a site twice' })
    .optional(),
  /**
   * Scheduled rotation: every this many rounds the coordinator re-shares the key epoch (every
   * roster site draws a fresh secret), so a share stolen now decrypts nothing encrypted after the
   * next rotation. 0 (default): only on enrollment and revocation.
   */
  rotateEveryRounds: z.int().min(0).max(1_000_000).default(0),
  /** How long each phase of a re-sharing (deal, collect) waits for the roster's sites, in ms. */
  reshareTimeoutMs: z.int().min(1000).max(3_600_000).default(60_000),
});

const cryptoSchema = z.strictObject({
  ckks: ckksSchema.prefault({}),
  signature: signatureSchema.prefault({}),
  keys: z.enum(KEY_SCHEMES).default(DEFAULT_KEY_SCHEME),
  threshold: thresholdSchema.prefault({}),
});

const codecSchema = z.strictObject({
  bits: z.literal(CODEC_BITS).default(8),
  clip: z.number().positive().default(0.05),
  maxContributors: z.int().min(1).max(65535).default(32),
  crcChunkBytes: z.int().min(1024).max(1048576).default(16384),
});

const natsSchema = z
  .strictObject({
    servers: z
      .array(
        z.string().regex(/^(nats|tls|ws|wss):\/\/\S+$/, {
          error: 'must be a NATS URL (nats://, tls://, ws:// or wss://host:port)',
        }),
      )
      .min(1)
      .default(() => ['nats://127.0.0.1:4222']),
    maxRetry: z.int().min(0).max(100).default(5),
    timeoutMs: z.int().min(1).max(600000).default(3000),
    /**
     * Mutual TLS files of this process (paths). Used whenever a server URL is `tls://`; each absent
     * field defaults from `members.keysDir`: `ca.crt`, `<member>.tls.crt`, `<member>.tls.key`.
     */
    tls: z
      .strictObject({
        ca: z.string().min(1).optional(),
        cert: z.string().min(1).optional(),
        key: z.string().min(1).optional(),
      })
      .optional(),
    /** This member's NKEY user seed file; default `<keysDir>/<member>.nk` when it exists. */
    nkeySeed: z.string().min(1).optional(),
    /** A NATS `.creds` file (JWT deployments) instead of an NKEY seed. */
    credentials: z.string().min(1).optional(),
  })
  .superRefine((nats, ctx) => {
    if (nats.nkeySeed !== undefined && nats.credentials !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['credentials'],
        message: 'give nats.nkeySeed or nats.credentials, not both',
      });
    }
  });

const pathsSchema = z.strictObject({
  dataDir: z.string().min(1).default('.cohort'),
});

const memberId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, {
  error: 'must be 1-64 characters of A-Z, a-z, 0-9, "_" and "-" (it becomes a NATS subject token)',
});

/** A SHA-256 in hex (upper case accepted; compared in lower case). */
const sha256Hex = z.string().regex(/^[0-9a-fA-F]{64}$/, { error: 'must be 64 hex characters (SHA-256)' });

/** Who takes part: the coordinator, the aggregators (with capacity weights) and the sites. */
const membersSchema = z.strictObject({
  coordinator: memberId.default('coordinator'),
  aggregators: z.array(z.strictObject({ id: memberId, capacity: z.number().positive().default(1) })).min(1),
  sites: z.array(z.strictObject({ id: memberId })).min(1),
  /** Read-only members: they may read the federation log (e.g. `cohort versions`), nothing else. */
  auditors: z.array(z.strictObject({ id: memberId })).default(() => []),
  /**
   * Keys folder: this member's own keys in `<keysDir>/<member>/` (or `keysDir` itself), public files
   * and envelopes in `<keysDir>/public/` (or `keysDir`); see docs/key-ceremony.md.
   */
  keysDir: z.string().min(1).default('keys'),
  /**
   * The signed member registry (`cohort registry create`), pinned by the SHA-256 of its file: a
   * member refuses to start on a file with another hash or a signature that does not verify, and
   * takes every member's public keys from it (and from the registry changes in the log). Required
   * ({@link cohortConfigSchema}); only `cohort registry create` reads a configuration without it.
   */
  registry: z
    .strictObject({
      path: z.string().min(1),
      sha256: z.string().regex(/^[0-9a-fA-F]{64}$/, { error: 'must be 64 hex characters (SHA-256)' }),
    })
    .optional(),
  /**
   * Fingerprints of the secrets every site shares (`cohort keys ckks create` and `cohort keys data
   * create` print them; docs/key-ceremony.md): a site refuses an envelope whose secret has another
   * fingerprint, even one a registered site signed. Absent: a site checks only that a registered
   * site made and signed its envelope.
   */
  keyFingerprints: z
    .strictObject({
      /** Of the CKKS secret key (`<site>.ckks.env`). */
      ckks: sha256Hex.optional(),
      /** Of the federation data key (`<site>.data.env`). */
      data: sha256Hex.optional(),
      /**
       * With `crypto.keys: threshold`: the key epoch's id, which binds the roster, the threshold
       * and every site's public share (`public/threshold.epoch.json`).
       */
      threshold: sha256Hex.optional(),
    })
    .optional(),
});

/** Round orchestration. */
/**
 * The coordinator's circuit breaker (docs/round-protocol.md, "Circuit breaker"): as the share of
 * failing or late sites over the last `window` rounds reaches `shrinkAt`, `dropOptionalAt`,
 * `freezeAt`, the coordinator leaves the failing sites out of cohorts, then also drops optional
 * work (federated evaluation), then opens no training round (probing once every `coolDownMs`).
 * A healthy federation (share 0) never leaves level 0.
 */
const breakerSchema = z
  .strictObject({
    enabled: z.boolean().default(true),
    /** Decided rounds the failing share is computed over. */
    window: z.int().min(1).max(1000).default(5),
    /** Failing share (site-rounds failing / site-rounds expected) at which each level starts. */
    shrinkAt: z.number().gt(0).max(1).default(0.2),
    dropOptionalAt: z.number().gt(0).max(1).default(0.4),
    freezeAt: z.number().gt(0).max(1).default(0.6),
    /** Calm rounds in a row (share below the level's threshold) before stepping down one level. */
    coolDownRounds: z.int().min(1).max(1000).default(3),
    /** …spanning at least this long; frozen, the wait before each probe round. */
    coolDownMs: z.int().min(0).max(86_400_000).default(60_000),
  })
  .superRefine((b, ctx) => {
    if (!(b.shrinkAt < b.dropOptionalAt)) {
      ctx.addIssue({
        code: 'custom',
        path: ['dropOptionalAt'],
        message: `must be above shrinkAt (${b.shrinkAt}), got ${b.dropOptionalAt}`,
      });
    }
    if (!(b.dropOptionalAt < b.freezeAt)) {
      ctx.addIssue({
        code: 'custom',
        path: ['freezeAt'],
        message: `must be above dropOptionalAt (${b.dropOptionalAt}), got ${b.freezeAt}`,
      });
    }
  });

/**
 * The aggregation tree (docs/round-protocol.md, "Aggregation tree"): when a round uses more
 * aggregators than `rootFanIn`, the coordinator makes some aggregators parents of others
 * (RoundOpen's `parents`), each parent summing at most `fanIn` children's partials, as many levels
 * deep as that takes. The default root fan-in keeps every realistic federation at one level
 * (sites → aggregators → coordinator).
 */
const treeSchema = z.strictObject({
  /** Most aggregators that send their partial straight to the coordinator. */
  rootFanIn: z.int().min(1).max(65_535).default(1024),
  /** Most child aggregators whose partials one aggregator sums (below the root). */
  fanIn: z.int().min(1).max(65_535).default(64),
  /**
   * How much later than its latest child an aggregator sends its partial at the latest, in ms: the
   * time a child's partial has to reach its parent. The leaves keep `round.deadlineMs`; the
   * coordinator waits for the top of the tree, so a round's partials may take up to
   * `deadlineMs + (levels − 1) · levelWaitMs`.
   */
  levelWaitMs: z.int().min(100).max(600_000).default(2000),
});

const roundSchema = z.strictObject({
  /** Rounds the coordinator runs (0: until stopped). */
  count: z.int().min(0).default(5),
  /** Aggregators cut stragglers this long after RoundOpen. */
  deadlineMs: z.int().min(100).max(3_600_000).default(120_000),
  /** Members that have not voted by then are dropped from the round's view. */
  voteTimeoutMs: z.int().min(100).max(3_600_000).default(60_000),
  heartbeatMs: z.int().min(50).max(60_000).default(1000),
  /** A member is considered gone after this many missed heartbeats. */
  missedHeartbeats: z.int().min(1).max(100).default(5),
  /** Bounded-load slack ε of the site → aggregator assignment. */
  epsilon: z.number().positive().default(0.25),
  /** Members to wait for before round 1 (default: all). */
  quorum: z.int().min(1).optional(),
  clipMultiplier: z.number().positive().default(6),
  /**
   * Fewest sites an aggregate may sum. With one contributor the aggregate is that site's update,
   * with two each site subtracts its own and reads the other's: below this the coordinator aborts
   * before PREPARE and sites refuse to decrypt. Lower it only for federations that accept that.
   */
  minContributors: z.int().min(1).max(65535).default(3),
  /**
   * Largest example count a site may claim (its FedAvg weight, pinned in RoundOpen): a heartbeat
   * claiming more is refused, so one site cannot drown the others by declaring 10^12 examples.
   */
  maxSiteExamples: z.number().positive().max(1e12).default(10_000_000),
  /**
   * A site's FedAvg weight in a round is capped at this many times the median of the round's
   * sites' example counts (RoundOpen pins the capped weight): one site claiming far more than the
   * others cannot take over the mean. With n sites one site's share is at most
   * factor / (factor + ⌈n/2⌉ − 1).
   */
  weightCapFactor: z.number().min(1).max(1000).default(4),
  /** A heartbeat stamped further than this from the coordinator's clock (either way) is refused. */
  clockSkewMs: z.int().min(100).max(3_600_000).default(30_000),
  breaker: breakerSchema.prefault({}),
  tree: treeSchema.prefault({}),
});

/** What the sites learn, identically everywhere. */
const learningSchema = z
  .strictObject({
    /**
     * `2nn`: the FedAvg paper's MNIST MLP (dense 200, 200); `logreg`: one dense layer; `mlp`:
     * dense `hidden`… with ReLUs; `cnn`: the FedAvg paper's MNIST CNN; `custom`: `layers`. Input
     * and classes come from the data contract (`data`), else MNIST ([1, 28, 28] or 784, 10).
     */
    model: z.enum(MODEL_KINDS).default('2nn'),
    /** Hidden layer widths of an `mlp` (e.g. [12500] for a 9.9M-parameter model); only with `mlp`. */
    hidden: z
      .array(
        z
          .int()
          .min(1)
          .max(1 << 20),
      )
      .min(1)
      .max(16)
      .optional(),
    /** Layers of a `custom` model (see `src/config/model-schema.ts`); only with `custom`. */
    layers: layersSchema.optional(),
    data: z.enum(['mnist']).default('mnist'),
    /** Rows of the training set split (IID) across the sites. */
    trainLimit: z.int().min(1).optional(),
    testLimit: z.int().min(1).optional(),
    initSeed: z.int().min(0).max(0xffffffff).default(1),
    epochs: z.int().min(1).default(1),
    batchSize: z.int().min(1).default(10),
    learningRate: z.number().positive().default(0.1),
    strategy: z.enum(['fedavg', 'fedprox', 'fedadam', 'fedyogi']).default('fedavg'),
    /**
     * `federated`: each round's participants evaluate the round's base model on their validation
     * rows and the totals travel summed under encryption (decision records them); `none`: no
     * evaluation lanes. Default: `federated` when the federation has a data contract (`data`).
     */
    evaluation: z.enum(['federated', 'none']).optional(),
    engine: z.enum(['cpu', 'webgpu']).default('cpu'),
    allowSoftwareGpu: z.boolean().default(false),
  })
  .superRefine((learning, ctx) => {
    if (learning.model === 'mlp' && learning.hidden === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['hidden'],
        message: "model 'mlp' needs its hidden layer widths",
      });
    }
    if (learning.model !== 'mlp' && learning.hidden !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['hidden'],
        message: `only model 'mlp' takes hidden widths, not '${learning.model}'`,
      });
    }
    if ((learning.model === 'custom') !== (learning.layers !== undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['layers'],
        message:
          learning.model === 'custom'
            ? "model 'custom' needs its layers"
            : `only model 'custom' takes layers, not '${learning.model}'`,
      });
    }
  });

/** Versions, recovery and durability (docs/round-protocol.md, "Catch-up, snapshots, recovery"). */
const historySchema = z.strictObject({
  /**
   * JetStream replicas of the log, the aggregate and snapshot stores and the coordinator lease:
   * 1 on a single server, 3 on a three-node cluster. A log stream with fewer replicas is refused.
   */
  replicas: z.int().min(1).max(5).default(1),
  /** Commits between snapshots (a site writes one at every multiple of this height); 0: none. */
  snapshotEvery: z.int().min(0).max(1_000_000).default(10),
  /** Models of past commits a site keeps (older ones are rebuilt from a snapshot when needed); ≥ 2. */
  keepModels: z.int().min(2).max(1_000_000).default(50),
  /** Coordinator lease: a second coordinator waits this long after the first stops renewing. */
  leaseMs: z.int().min(500).max(600_000).default(10_000),
  /**
   * An agent PREPARED for longer than this without hearing the decision reads it from the log
   * (default: `round.voteTimeoutMs` + 5 s).
   */
  decisionTimeoutMs: z.int().min(100).max(3_600_000).optional(),
  /** Largest log stream, bytes; new entries are refused beyond it, old ones never dropped. */
  logMaxBytes: z.int().min(1_048_576).default(1_073_741_824),
  /**
   * How long the site updates aggregators sum are kept for the audit (object store
   * `cohort-F-updates`, JetStream `max_age`), ms; 0 keeps them until removed. Default 30 days;
   * at most 100 days. Applies when the coordinator creates the store.
   */
  updateRetentionMs: z
    .int()
    .min(0)
    .max(100 * 86_400_000)
    .default(30 * 86_400_000),
});

/** Scopes an admin API token may hold (docs/admin-api.md): admin ⊇ operator ⊇ auditor. */
const adminScopeSchema = z.enum(['admin', 'operator', 'auditor']);

const adminTokenSchema = z.strictObject({
  /** Names the token in logs and in the log's admin-action records (never the token itself). */
  id: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, {
    error: 'must be 1-64 characters of A-Z, a-z, 0-9, "_", "." and "-"',
  }),
  /** SHA-256 of the token, hex (`cohort admin token` prints both); the token itself is never configured. */
  sha256: z.string().regex(/^[0-9a-f]{64}$/, {
    error: 'must be the SHA-256 of the token: 64 lowercase hex digits (cohort admin token)',
  }),
  scopes: z.array(adminScopeSchema).min(1),
});

/** The coordinator's admin API (docs/admin-api.md); absent: no API. */
const adminSchema = z
  .strictObject({
    /** Listen address; 127.0.0.1 unless operators reach it from elsewhere (then with `tls`). */
    host: z.string().min(1).default('127.0.0.1'),
    /** Listen port (0: any free port; the coordinator prints the bound address). */
    port: z.int().min(0).max(65_535).default(8640),
    tokens: z.array(adminTokenSchema).default(() => []),
    /**
     * HTTPS with this PEM certificate and key (files); plain HTTP without, which is allowed only on
     * a loopback `host` (127.0.0.0/8, ::1, localhost) unless `insecurePlaintextOnNetwork` is set.
     */
    tls: z.strictObject({ cert: z.string().min(1), key: z.string().min(1) }).optional(),
    /**
     * Serve plain HTTP on a non-loopback `host`: bearer tokens and answers then cross the network
     * in clear. Off by default; for a host reached only through a TLS-terminating proxy on a
     * trusted link. The coordinator logs a warning at every start with it.
     */
    insecurePlaintextOnNetwork: z.boolean().default(false),
    /** Serve `GET /metrics` without a token (for a Prometheus on a trusted network); default: operator scope. */
    metricsPublic: z.boolean().default(false),
    /** A site's model store readable on the coordinator's host, for `GET /v1/versions/{ref}/export`. */
    modelStore: z.string().min(1).optional(),
    /**
     * Requests per window. A token is checked first: `perToken` counts each token's requests (and
     * `sensitive` its rollbacks and key rotations); `perIp` counts only requests no token
     * authenticates, per address, so a flood without a token locks out no token.
     */
    rateLimit: z
      .strictObject({
        windowMs: z.int().min(1000).max(3_600_000).default(60_000),
        perIp: z.int().min(1).max(1_000_000).default(600),
        perToken: z.int().min(1).max(1_000_000).default(120),
        sensitive: z.int().min(1).max(1_000_000).default(5),
      })
      .prefault({}),
    /**
     * Bounds of the audit routes (docs/admin-api.md, "Audit routes"): each bundle export or log
     * audit runs in a process of its own, one per token, `maxJobs` in all, stopped at
     * `maxBundleBytes` or `timeoutMs` or when its client leaves; in `plain` mode the stored
     * contributions (the sites' updates in the clear) go only to `plainContributions` and wider.
     */
    audit: z
      .strictObject({
        maxJobs: z.int().min(1).max(16).default(2),
        maxBundleBytes: z
          .int()
          .min(1024)
          .max(Number.MAX_SAFE_INTEGER)
          .default(1024 * 1024 * 1024),
        timeoutMs: z.int().min(1).max(86_400_000).default(900_000),
        plainContributions: adminScopeSchema.default('admin'),
      })
      .prefault({}),
  })
  .superRefine((admin, ctx) => {
    const clear = plaintextAdminProblem(admin);
    if (clear !== null) ctx.addIssue({ code: 'custom', path: ['tls'], message: clear });
    if (!Array.isArray(admin.tokens)) return;
    const ids = new Set<string>();
    const hashes = new Set<string>();
    admin.tokens.forEach((t, i) => {
      if (typeof t?.id === 'string' && ids.has(t.id))
        ctx.addIssue({ code: 'custom', path: ['tokens', i, 'id'], message: `duplicate token id ${t.id}` });
      if (typeof t?.sha256 === 'string' && hashes.has(t.sha256))
        ctx.addIssue({
          code: 'custom',
          path: ['tokens', i, 'sha256'],
          message: 'the same token is configured twice',
        });
      ids.add(t?.id);
      hashes.add(t?.sha256);
    });
  });

const logSchema = z.strictObject({
  level: z.enum(LOG_LEVELS).default('info'),
});

/**
 * {@link cohortConfigSchema} without its one bootstrap rule (a members section pins the signed
 * registry): what `cohort registry create` reads, before the registry it makes exists. Nothing that
 * runs a member may use it.
 */
export const bootstrapConfigSchema = z
  .strictObject({
    federation: federationSchema,
    crypto: cryptoSchema.prefault({}),
    codec: codecSchema.prefault({}),
    nats: natsSchema.prefault({}),
    paths: pathsSchema.prefault({}),
    log: logSchema.prefault({}),
    /** Deployment: members, round timing and learning settings (needed by the services). */
    members: membersSchema.optional(),
    round: roundSchema.prefault({}),
    learning: learningSchema.prefault({}),
    history: historySchema.prefault({}),
    /** The federation's data contract (docs/data-contract.md); pinned into the genesis commit. */
    data: dataContractSchema.optional(),
    /** The coordinator's admin API (docs/admin-api.md). */
    admin: adminSchema.optional(),
    /** Differential privacy of the committed models (docs/privacy.md); off without. */
    privacy: privacySchema.optional(),
  })
  .superRefine((cfg, ctx) => {
    checkAggregation(cfg, ctx);
    const bits = cfg.codec?.bits;
    const maxContributors = cfg.codec?.maxContributors;
    const exactBits = cfg.crypto?.ckks?.exactBits;
    if (
      !CODEC_BITS.includes(bits) ||
      !Number.isInteger(maxContributors) ||
      maxContributors < 1 ||
      !Number.isInteger(exactBits)
    ) {
      return; // malformed fields are reported by their own checks
    }
    const headroom = Math.ceil(Math.log2(maxContributors));
    if (bits + headroom > exactBits) {
      ctx.addIssue({
        code: 'custom',
        path: ['codec', 'maxContributors'],
        message: `${bits}-bit lanes summed over ${maxContributors} contributors need ${bits + headroom} bits, more than crypto.ckks.exactBits (${exactBits})`,
      });
    }
    const n = cfg.crypto?.ckks?.polyModulusDegree;
    const scaleBits = cfg.crypto?.ckks?.scaleBits;
    if (Number.isInteger(scaleBits) && POLY_MODULUS_DEGREES.includes(n)) {
      const needed = minScaleBits(n, maxContributors);
      if (scaleBits < needed) {
        ctx.addIssue({
          code: 'custom',
          path: ['crypto', 'ckks', 'scaleBits'],
          message: `a sum of ${maxContributors} ciphertexts (codec.maxContributors) decrypts with per-slot error σ ≈ ${slotNoiseSigma(n, scaleBits, maxContributors).toFixed(3)} at scale 2^${scaleBits}, too close to the ${LANE_SUM_TOLERANCE} a lane sum tolerates: use scaleBits ≥ ${needed} (and exactBits + scaleBits ≤ the first modulus − 1)`,
        });
      }
    }
  });

/**
 * Schema of a federation configuration file. Every object is strict (an unknown key is an
 * error, so typos are caught); every field but `federation.id` has a default. Cross-field
 * checks: the CKKS coefficient modulus fits the 128-bit security limit of its degree, the
 * signature algorithm is among the allowed ones, a lane of `codec.bits` summed over
 * `codec.maxContributors` sites fits `crypto.ckks.exactBits`, the scale keeps the noise of
 * that many summed ciphertexts within what a lane sum tolerates (`minScaleBits`), the admin API
 * serves plain HTTP on a loopback host only, and a members section pins the signed member registry
 * (`members.registry`): without the pin a member would trust whatever public key files lie in its
 * keys folder.
 */
export const cohortConfigSchema = bootstrapConfigSchema.superRefine((cfg, ctx) => {
  const holders = cfg.crypto?.threshold?.holders;
  const sites = cfg.members?.sites?.map((s) => s.id);
  if (Array.isArray(holders) && Array.isArray(sites)) {
    holders.forEach((id, k) => {
      if (!sites.includes(id)) {
        ctx.addIssue({
          code: 'custom',
          path: ['crypto', 'threshold', 'holders', k],
          message: `${JSON.stringify(id)} is not one of members.sites`,
        });
      }
    });
    const t = cfg.crypto?.threshold?.sites;
    if (Number.isInteger(t) && t! > holders.length) {
      ctx.addIssue({
        code: 'custom',
        path: ['crypto', 'threshold', 'sites'],
        message: `${t} holders must decrypt, but crypto.threshold.holders names ${holders.length}`,
      });
    }
  }
  // A federation keyed with a shared key before threshold became the default: say so, rather than
  // fail later on a key file that was never made.
  if (
    cfg.federation?.mode === 'he' &&
    cfg.crypto?.keys === 'threshold' &&
    cfg.members?.keyFingerprints?.ckks !== undefined
  ) {
    ctx.addIssue({
      code: 'custom',
      path: ['crypto', 'keys'],
      message:
        'is threshold (the default when unset), but members.keyFingerprints.ckks pins a shared CKKS key: a federation keyed with a shared key sets crypto.keys: shared; one moving to threshold keys removes that pin and runs the threshold key ceremony (docs/key-ceremony.md)',
    });
  }
  const members = cfg.members as { registry?: unknown } | undefined;
  if (typeof members === 'object' && members !== null && members.registry === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['members', 'registry'],
      message:
        'required: pin the signed member registry ({ path, sha256 }: `cohort registry create` prints both); without the pin a member would trust any public key file in its keys folder',
    });
  }
});

/** A validated configuration as plain, mutable data (the type zod infers from {@link cohortConfigSchema}). */
export type CohortConfigData = z.output<typeof cohortConfigSchema>;

/** What a configuration file may contain before defaults are filled (zod's input type). */
export type CohortConfigInput = z.input<typeof cohortConfigSchema>;

/** Readonly at every depth. */
export type DeepReadonly<T> = T extends (infer E)[]
  ? readonly DeepReadonly<E>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

/** A validated, deeply frozen configuration, as {@link loadConfig} and {@link parseConfig} return it. */
export type CohortConfig = DeepReadonly<CohortConfigData>;

/** One of {@link SIGNATURE_ALGORITHMS}. */
export type SignatureAlgorithm = (typeof SIGNATURE_ALGORITHMS)[number];
