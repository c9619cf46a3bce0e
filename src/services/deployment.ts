import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { DEFAULT_CKKS_PARAMS, getCkksContext } from '../../crypto/ckks/index.ts';
import { type CohortConfig, type CohortConfigInput, parseConfig } from '../config/index.ts';
import { type NatsServerHandle, startNatsServer } from '../transport/index.ts';
import { runKeyCeremony } from './key-ceremony.ts';

/** A local federation: keys, a nats-server with per-member users, and the config file. */
export interface LocalDeployment {
  readonly dir: string;
  readonly configPath: string;
  readonly config: CohortConfig;
  readonly nats: NatsServerHandle;
  readonly coordinator: string;
  readonly aggregators: readonly string[];
  readonly sites: readonly string[];
  stop(): Promise<void>;
}

/**
 * Sets up a federation on this machine in `dir`: runs the key ceremony, starts nats-server (JetStream
 * on, free port, the members' users and permissions), and writes `federation.yaml` pointing at it.
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
}): Promise<LocalDeployment> {
  const federation = options.federation ?? 'demo';
  const coordinator = 'coordinator';
  const aggregators = Array.from({ length: options.aggregators ?? 2 }, (_, i) => `agg-${i + 1}`);
  const sites = Array.from({ length: options.sites ?? 4 }, (_, i) => `site-${i + 1}`);
  const auditors = Array.from({ length: options.auditors ?? 1 }, (_, i) => `auditor-${i + 1}`);
  const keysDir = join(options.dir, 'keys');
  mkdirSync(keysDir, { recursive: true });
  const ckks = await getCkksContext(DEFAULT_CKKS_PARAMS);
  const { authorization } = runKeyCeremony({
    dir: keysDir,
    federation,
    coordinator,
    aggregators,
    sites,
    auditors,
    algorithm: 'falcon-512',
    ckks,
  });
  const nats = await startNatsServer({
    jetstream: true,
    config: `${authorization}\n${options.natsConfig ?? ''}`,
  });
  const input = {
    ...options.overrides,
    federation: { id: federation, mode: 'he' as const },
    nats: { servers: [nats.url], ...options.overrides?.nats },
    members: {
      coordinator,
      aggregators: aggregators.map((id) => ({ id, capacity: 1 })),
      sites: sites.map((id) => ({ id })),
      auditors: auditors.map((id) => ({ id })),
      keysDir,
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
    stop: () => nats.stop(),
  };
}
