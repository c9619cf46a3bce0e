import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NodeConnectionOptions } from '@nats-io/transport-node';
import { stringify } from 'yaml';
import { type CkksParams, DEFAULT_CKKS_PARAMS, getCkksContext } from '../../crypto/ckks/index.ts';
import { DEFAULT_THRESHOLD_PARAMS, getThresholdContext } from '../../crypto/threshold/index.ts';
import {
  type CohortConfig,
  type CohortConfigInput,
  DEFAULT_KEY_SCHEME,
  parseConfig,
} from '../config/index.ts';
import {
  type NatsServerHandle,
  type NatsUser,
  natsAuthOptions,
  renderServerLimits,
  startNatsServer,
} from '../transport/index.ts';
import { type CeremonyResult, runKeyCeremony } from './key-ceremony.ts';
import {
  generateMemberNatsKeys,
  issueMemberCertificate,
  loadCertificateAuthority,
  memberNatsPaths,
} from './nats-credentials.ts';
import { federationLimitsFor } from './nats-limits.ts';
import { generateSigningKeyPairs } from './signing-key-pool.ts';

/** A local federation: keys, a nats-server (mutual TLS, NKEY users, permissions), and the config file. */
export interface LocalDeployment {
  readonly dir: string;
  readonly configPath: string;
  readonly config: CohortConfig;
  readonly nats: NatsServerHandle;
  readonly coordinator: string;
  readonly aggregators: readonly string[];
  readonly sites: readonly string[];
  /**
   * `connect()` options of the operator's `admin` user (every subject, the whole JetStream API),
   * present only with `admin: true`: for tests that reset JetStream state no member may touch.
   */
  readonly admin: NodeConnectionOptions | undefined;
  /** The registry officer's key pair file and public key (`keys/officer/`), for registry changes. */
  readonly officer: { readonly key: string; readonly pub: string };
  /** The signed member registry pinned in the config (`members.registry`). */
  readonly registry: { readonly path: string; readonly sha256: string };
  /** With threshold keys (`crypto.keys: threshold`): the key epoch the ceremony made. */
  readonly threshold: CeremonyResult['threshold'];
  stop(): Promise<void>;
}

/**
 * Sets up a federation on this machine in `dir`: runs the key ceremony (each member's keys and NATS
 * credentials in `dir/keys/<id>/`, public files, envelopes and the signed registry in
 * `dir/keys/public/`, the officer's key in `dir/keys/officer/`, the federation CA key and
 * nats-server's certificate in `dir/nats`; see `runKeyCeremony`), pins the registry's SHA-256 in the
 * config (`members.registry`) and the shared secrets' fingerprints (`members.keyFingerprints`),
 * starts nats-server (JetStream on, free port, TLS required with client certificates of the
 * federation CA, the members' NKEY users and permissions), and writes `federation.yaml` pointing at
 * it with a `tls://` URL (each member's TLS and NKEY files default from `members.keysDir`).
 * `overrides` is merged into the config (round timing, learning settings). Used by the demo and the
 * integration tests.
 */
export async function createLocalDeployment(options: {
  dir: string;
  federation?: string;
  aggregators?: number;
  sites?: number;
  /** Read-only members `auditor-1`…, default 1. */
  auditors?: number;
  overrides?: Partial<CohortConfigInput>;
  natsConfig?: string;
  /** Also create an operator `admin` NKEY user with full rights (see {@link LocalDeployment.admin}). */
  admin?: boolean;
  /** Sites (e.g. `site-4`) configured but not enrolled yet: no keys, not in the registry (see `runKeyCeremony`). */
  unenrolled?: readonly string[];
}): Promise<LocalDeployment> {
  const federation = options.federation ?? 'demo';
  const coordinator = 'coordinator';
  const aggregators = Array.from({ length: options.aggregators ?? 2 }, (_, i) => `agg-${i + 1}`);
  const sites = Array.from({ length: options.sites ?? 4 }, (_, i) => `site-${i + 1}`);
  const auditors = Array.from({ length: options.auditors ?? 1 }, (_, i) => `auditor-${i + 1}`);
  const keysDir = join(options.dir, 'keys');
  mkdirSync(keysDir, { recursive: true });
  // The CKKS secret is made for the federation's parameters: the defaults with its overrides.
  const ckks = await getCkksContext({
    ...DEFAULT_CKKS_PARAMS,
    ...options.overrides?.crypto?.ckks,
  } as CkksParams);
  // Falcon key generation dominates a large ceremony: made in worker threads beforehand.
  const enrolled = [coordinator, ...aggregators, ...sites, ...auditors].filter(
    (id) => !(options.unenrolled ?? []).includes(id),
  );
  const signingKeys = await generateSigningKeyPairs('falcon-512', enrolled.length);
  const { users, tls, registry, officer, keyFingerprints, threshold } = runKeyCeremony({
    signingKeys,
    dir: keysDir,
    federation,
    coordinator,
    aggregators,
    sites,
    auditors,
    algorithm: 'falcon-512',
    ckks,
    // A plain federation encrypts nothing, so it gets no threshold ceremony.
    ...((options.overrides?.crypto?.keys ?? DEFAULT_KEY_SCHEME) === 'threshold' &&
    (options.overrides?.federation?.mode ?? 'he') === 'he'
      ? {
          threshold: {
            ctx: await getThresholdContext(DEFAULT_THRESHOLD_PARAMS),
            ...(options.overrides?.crypto?.threshold?.sites === undefined
              ? {}
              : { sites: options.overrides.crypto.threshold.sites }),
            ...(options.overrides?.crypto?.threshold?.holders === undefined
              ? {}
              : { holders: options.overrides.crypto.threshold.holders }),
            minContributors: options.overrides?.round?.minContributors ?? 3,
          },
        }
      : {}),
    tlsDir: join(options.dir, 'nats'),
    ...(options.unenrolled === undefined ? {} : { unenrolled: options.unenrolled }),
  });
  let admin: { user: NatsUser; options: NodeConnectionOptions } | undefined;
  if (options.admin === true) {
    const natsDir = join(options.dir, 'nats');
    const { nkey, tlsPublicKeyPem } = generateMemberNatsKeys(natsDir, 'admin', true);
    const paths = memberNatsPaths(natsDir, 'admin');
    issueMemberCertificate(loadCertificateAuthority(natsDir), 'admin', tlsPublicKeyPem, paths.tlsCert);
    admin = {
      user: { user: 'admin', nkey, publish: { allow: ['>'] }, subscribe: { allow: ['>'] } },
      options: {
        name: 'admin',
        ...natsAuthOptions({
          tls: { ca: tls.ca, cert: paths.tlsCert, key: paths.tlsKey },
          nkeySeedFile: paths.seed,
        }),
      },
    };
  }
  const allUsers = admin === undefined ? users : [...users, admin.user];
  // The federation's server-wide limits, as `cohort nats config` writes them; a test's own
  // configuration comes after them (a repeated key takes the last value).
  const limits = renderServerLimits(federationLimitsFor(allUsers.length, ckks));
  const nats = await startNatsServer({
    jetstream: true,
    tls,
    users: allUsers,
    config: options.natsConfig === undefined ? limits : `${limits}\n${options.natsConfig}`,
  });
  const input = {
    ...options.overrides,
    // The id is the deployment's; mode and aggregation may come from the overrides (default he).
    federation: { mode: 'he' as const, ...options.overrides?.federation, id: federation },
    nats: { servers: [nats.url], ...options.overrides?.nats },
    members: {
      coordinator,
      aggregators: aggregators.map((id) => ({ id, capacity: 1 })),
      sites: sites.map((id) => ({ id })),
      auditors: auditors.map((id) => ({ id })),
      keysDir,
      registry: { path: registry.path, sha256: registry.sha256 },
      keyFingerprints,
    },
    paths: { dataDir: join(options.dir, 'data') },
  };
  const config = parseConfig(input, { source: 'local deployment' });
  const configPath = join(options.dir, 'federation.yaml');
  writeFileSync(configPath, stringify(input));
  return {
    dir: options.dir,
    configPath,
    config,
    nats,
    coordinator,
    aggregators,
    sites,
    admin: admin === undefined ? undefined : { servers: nats.url, ...admin.options },
    officer,
    registry,
    threshold,
    stop: () => nats.stop(),
  };
}
