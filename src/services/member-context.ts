import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NodeConnectionOptions } from '@nats-io/transport-node';
import { type CkksParams, getCkksContext, PlainLaneContext } from '../../crypto/ckks/index.ts';
import { sha256Hex } from '../../crypto/digest/index.ts';
import type { LaneContext } from '../../crypto/lanes/index.ts';
import {
  loadPublicKey,
  loadSigningKeyPair,
  type PublicSigningKey,
  type SigningKeyPair,
} from '../../crypto/signature/index.ts';
import {
  DEFAULT_THRESHOLD_PARAMS,
  getThresholdContext,
  ThresholdLaneContext,
} from '../../crypto/threshold/index.ts';
import type { CohortConfig } from '../config/index.ts';
import { ConfigError, InvalidArgumentError } from '../errors/index.ts';
import { createLogger, type Logger } from '../log/index.ts';
import type { KeyLookup } from '../protocol/index.ts';
import {
  loadRegistry,
  memberKeyDir,
  memberSigningKeyFile,
  openRegistryChange,
  publicFile,
  publicKeyDir,
  type RegistryRole,
  RegistryView,
  type VerifiedRegistry,
} from '../registry/index.ts';
import {
  connectTransport,
  type FederationSubjects,
  federationReplyPolicy,
  federationSubjects,
  type NatsAuthFiles,
  type NatsTransport,
  natsAuthOptions,
  type TransportSubscription,
} from '../transport/index.ts';
import { openLogReader } from './federation-log/log-reader.ts';
import type { SharedLogReads } from './federation-log/shared-log-reads.ts';
import { federationTlsPaths, memberNatsPaths } from './nats-credentials.ts';

/** A member's role in the federation. */
export type MemberRole = 'coordinator' | 'aggregator' | 'site' | 'auditor';

/** Everything a service process needs: validated config, keys, registry, NATS, logger. */
export interface MemberContext {
  readonly config: CohortConfig;
  readonly members: NonNullable<CohortConfig['members']>;
  readonly member: string;
  readonly role: MemberRole;
  readonly signing: SigningKeyPair;
  /**
   * Public signing keys of every member at open: from the pinned registry (`members.registry`), or
   * without one from every `<id>.pub` of the keys folder.
   */
  readonly registry: ReadonlyMap<string, PublicSigningKey>;
  /** The pinned registry file, verified (hash and officer signature); undefined without a pin. */
  readonly signedRegistry: VerifiedRegistry | undefined;
  /**
   * The registry view {@link keys} consults: the pinned registry with the registry changes of the
   * log folded in (see {@link openMember}); without a pin, the `.pub` keys, never revoked.
   */
  readonly registryView: RegistryView;
  /**
   * Makes {@link keys} and {@link registryView} follow `view` (the coordinator hands it the view of
   * the log history it appends to).
   */
  followRegistry(view: RegistryView): void;
  /**
   * `keys(id)`: `id`'s public signing key for the round the member's log view is at; undefined for
   * an unknown, not yet enrolled or revoked member.
   */
  readonly keys: KeyLookup;
  /** The keys folder (`members.keysDir`): own keys in `<keysDir>/<member>/`, shared files in `public/`. */
  readonly keysDir: string;
  readonly transport: NatsTransport;
  readonly subjects: FederationSubjects;
  readonly ckks: LaneContext;
  readonly log: Logger;
  close(): Promise<void>;
}

/** The role `member` has in `config`, or an error naming the ids that exist. */
export function roleOf(config: CohortConfig, member: string): MemberRole {
  const m = config.members;
  if (!m) {
    throw new ConfigError('CONFIG_INVALID', 'members: the services need a members section', {
      details: { path: 'members' },
    });
  }
  if (member === m.coordinator) return 'coordinator';
  if (m.aggregators.some((a) => a.id === member)) return 'aggregator';
  if (m.sites.some((s) => s.id === member)) return 'site';
  if (m.auditors.some((a) => a.id === member)) return 'auditor';
  throw new InvalidArgumentError(
    `--member ${member} is not in members (coordinator ${m.coordinator}, aggregators ${m.aggregators.map((a) => a.id).join(', ')}, sites ${m.sites.map((s) => s.id).join(', ')}, auditors ${m.auditors.map((a) => a.id).join(', ') || 'none'})`,
  );
}

/**
 * A member of the configuration whose public key was not in the registry at start: a site
 * enrolled since (`enrollSite` wrote `<id>.pub`). Read once and added; undefined while absent.
 * Only ids the configuration names are looked up, so a stray file cannot add a member.
 */
function enrolledKey(
  registry: Map<string, PublicSigningKey>,
  dir: string,
  members: ReadonlySet<string>,
  id: string,
): PublicSigningKey | undefined {
  if (!members.has(id)) return undefined;
  const path = publicFile(dir, `${id}.pub`, id);
  if (!existsSync(path)) return undefined;
  const key = loadPublicKey(path);
  registry.set(id, key);
  return key;
}

/**
 * Reads every `<id>.pub` of a keys folder (its shared `public/` folder when it has one): the
 * registry of members' public signing keys of deployments without a signed registry. Other public
 * files (`<id>.kem.pub`, `<id>.nk.pub`, `<id>.tls.pub`) are skipped: a member id has no dot.
 */
export function readRegistry(dir: string): Map<string, PublicSigningKey> {
  const registry = new Map<string, PublicSigningKey>();
  const shared = publicKeyDir(dir);
  for (const name of readdirSync(shared)) {
    if (/^[A-Za-z0-9_-]+\.pub$/.test(name))
      registry.set(name.slice(0, -4), loadPublicKey(join(shared, name)));
  }
  return registry;
}

/**
 * The pinned registry of `config` (`members.registry`), verified: its file's SHA-256 must be the
 * pin and the officer's signature must verify; it must be for this federation and give each member
 * the configuration's role. Undefined without a pin.
 *
 * @throws RegistryError `REGISTRY_UNREADABLE`, `REGISTRY_PIN_MISMATCH`, `REGISTRY_INVALID`,
 *   `REGISTRY_SIGNATURE_INVALID` naming the file; ConfigError when it contradicts the configuration.
 */
export function loadPinnedRegistry(config: CohortConfig): VerifiedRegistry | undefined {
  const pin = config.members?.registry;
  if (pin === undefined) return undefined;
  const verified = loadRegistryOnce(pin.path, pin.sha256);
  const registry = verified.registry;
  if (registry.federation !== config.federation.id) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `members.registry: ${pin.path} is the registry of federation ${JSON.stringify(registry.federation)}, not ${config.federation.id}`,
      { details: { path: 'members.registry.path' } },
    );
  }
  for (const m of registry.members) {
    const role = configRole(config, m.id);
    if (role !== m.role) {
      throw new ConfigError(
        'CONFIG_INVALID',
        `members.registry: ${pin.path} lists ${m.id} as ${m.role}, the configuration ${role === undefined ? 'does not list it' : `as ${role}`}`,
        { details: { path: 'members.registry.path', member: m.id } },
      );
    }
  }
  return verified;
}

/**
 * Registries this process verified, by path and SHA-256: a swarm opens hundreds of members on one
 * pinned file, and decoding a 1,000-member registry and verifying its officer signature (~2 MB)
 * takes most of a second. The file is still read and hashed against the pin on every call.
 */
const verifiedRegistries = new Map<string, VerifiedRegistry>();

/** `loadRegistry(path, pin)`, decoded and verified once per process for the same bytes. */
function loadRegistryOnce(path: string, pin: string): VerifiedRegistry {
  let hash: string | undefined;
  try {
    hash = sha256Hex(readFileSync(path));
  } catch {
    // loadRegistry names the unreadable file
  }
  const key = `${path}\0${pin.toLowerCase()}`;
  const cached = hash === pin.toLowerCase() ? verifiedRegistries.get(key) : undefined;
  if (cached !== undefined) return cached;
  const verified = loadRegistry(path, pin);
  verifiedRegistries.set(key, verified);
  return verified;
}

/** `id`'s role in `config`, or undefined. */
function configRole(config: CohortConfig, id: string): RegistryRole | undefined {
  const m = config.members;
  if (!m) return undefined;
  if (id === m.coordinator) return 'coordinator';
  if (m.aggregators.some((a) => a.id === id)) return 'aggregator';
  if (m.sites.some((s) => s.id === id)) return 'site';
  if (m.auditors.some((a) => a.id === id)) return 'auditor';
  return undefined;
}

/**
 * The NATS credential files `member` connects with (see `nats-credentials.ts` for the names; the
 * member's own folder is `<keysDir>/<member>/` when it exists, else `keysDir`):
 * - TLS whenever a server URL is `tls://` or `nats.tls` is set; each absent `nats.tls` field
 *   defaults to `ca.crt` (shared `public/` folder, else own folder), `<member>.tls.crt`,
 *   `<member>.tls.key` (own folder);
 * - `nats.credentials`, else `nats.nkeySeed`, else `<member>.nk` of its own folder when it exists
 *   (no authentication otherwise, for servers without users).
 */
export function memberNatsFiles(config: CohortConfig, member: string, keysDir?: string): NatsAuthFiles {
  const dir = keysDir ?? config.members?.keysDir ?? 'keys';
  const nats = config.nats;
  const paths = memberNatsPaths(memberKeyDir(dir, member), member);
  const caCert = publicFile(dir, federationTlsPaths('').caCert, member);
  const useTls = nats.tls !== undefined || nats.servers.some((s) => s.startsWith('tls://'));
  const seed = nats.nkeySeed ?? (existsSync(paths.seed) ? paths.seed : undefined);
  return {
    ...(useTls
      ? {
          tls: {
            ca: nats.tls?.ca ?? caCert,
            cert: nats.tls?.cert ?? paths.tlsCert,
            key: nats.tls?.key ?? paths.tlsKey,
          },
        }
      : {}),
    ...(nats.credentials !== undefined
      ? { credentials: nats.credentials }
      : seed !== undefined
        ? { nkeySeedFile: seed }
        : {}),
  };
}

/**
 * Options for a raw `connect()` of `@nats-io/transport-node` as `member` (servers, name, its inbox
 * prefix, TLS and NKEY authenticator from {@link memberNatsFiles}): for tools and tests that need a
 * bare connection with a member's real credentials.
 */
export function memberConnectOptions(
  config: CohortConfig,
  member: string,
  keysDir?: string,
): NodeConnectionOptions {
  return {
    servers: [...config.nats.servers],
    name: member,
    inboxPrefix: federationSubjects(config.federation.id).inboxPrefix(member),
    ...natsAuthOptions(memberNatsFiles(config, member, keysDir)),
  };
}

/** Options of {@link openMember}. */
export interface OpenMemberOptions {
  /** The keys folder (default `members.keysDir`). */
  readonly keysDir?: string;
  /** Log entries shared with the other members of this process (a swarm's sites); none by default. */
  readonly sharedLogReads?: SharedLogReads;
}

/**
 * Opens a member: checks its role, loads its signing key (`<member>.key` of its own folder) and
 * the registry, connects to NATS with the member's credentials ({@link memberNatsFiles}: mutual
 * TLS and its NKEY), and builds the CKKS context (public parameters only).
 *
 * The registry: with `members.registry`, the pinned file ({@link loadPinnedRegistry}; refused on
 * another hash or a bad signature) and the registry changes of the log. The coordinator's view
 * follows the history it appends to (its service calls {@link MemberContext.followRegistry}); every
 * other member reads the log's registry changes now and again whenever the coordinator announces
 * one on `cohort.<F>.registry` (it does so right after logging it, before the round it applies
 * from opens). Without a pin: every `<id>.pub` of the keys folder, a configured member's file
 * picked up on first use (older deployments and tests).
 */
export async function openMember(
  config: CohortConfig,
  member: string,
  options: OpenMemberOptions = {},
): Promise<MemberContext> {
  const { keysDir, sharedLogReads } = options;
  const role = roleOf(config, member);
  const members = config.members!;
  const dir = keysDir ?? members.keysDir;
  const signed = loadPinnedRegistry(config);
  const signing = loadSigningKeyPair(memberSigningKeyFile(dir, member));
  const registry = signed === undefined ? readRegistry(dir) : initialKeys(signed);
  const memberIds = new Set([
    members.coordinator,
    ...members.aggregators.map((a) => a.id),
    ...members.sites.map((s) => s.id),
  ]);
  let view =
    signed === undefined
      ? RegistryView.fromKeys(config.federation.id, registry, (id) => configRole(config, id))
      : RegistryView.fromRegistry(signed.registry);
  const log = createLogger({ level: config.log.level, name: `cohort-${role}`, base: { member } });
  const subjects = federationSubjects(config.federation.id);
  const transport = await connectTransport({
    servers: [...config.nats.servers],
    name: member,
    inboxPrefix: subjects.inboxPrefix(member),
    // A request is answered only in its sender's own inbox (the member its subject names).
    replyPolicy: federationReplyPolicy(subjects, members.coordinator),
    ...memberNatsFiles(config, member, dir),
    maxRetry: config.nats.maxRetry,
    timeoutMs: config.nats.timeoutMs,
  });
  let follower: RegistryFollower | undefined;
  try {
    if (signed !== undefined && role !== 'coordinator') {
      follower = new RegistryFollower(transport, view, {
        federation: config.federation.id,
        coordinator: members.coordinator,
        subject: subjects.registry,
        log,
        ...(sharedLogReads === undefined ? {} : { shared: sharedLogReads }),
      });
      await follower.start();
    }
  } catch (err) {
    await transport.close().catch(() => undefined);
    throw err;
  }
  const ckks = await laneContextOf(config);
  const legacyRegistry = registry as Map<string, PublicSigningKey>;
  return {
    config,
    members,
    member,
    role,
    signing,
    registry,
    signedRegistry: signed,
    get registryView() {
      return view;
    },
    followRegistry(next: RegistryView) {
      view = next;
    },
    keys:
      signed === undefined
        ? (s) => legacyRegistry.get(s) ?? enrolledKey(legacyRegistry, dir, memberIds, s)
        : (s) => view.current(s),
    keysDir: dir,
    transport,
    subjects,
    ckks,
    log,
    async close() {
      await follower?.close();
      await transport.close();
    },
  };
}

/** The signing keys a verified registry lists (for {@link MemberContext.registry}). */
function initialKeys(signed: VerifiedRegistry): Map<string, PublicSigningKey> {
  return new Map(signed.registry.members.map((m) => [m.id, m.signingKey]));
}

/**
 * Keeps a non-coordinator member's registry view current: reads the log (stream info and
 * get-message only, as a site's or auditor's NATS user may) and folds its registry changes in,
 * checking each with the officer's key and the registry's rules, and tracking the round; reads
 * again whenever the coordinator announces a change on `cohort.<F>.registry`. A change it cannot
 * fold is logged and skipped (the log's full readers refuse such a log).
 */
class RegistryFollower {
  readonly #transport: NatsTransport;
  readonly #view: RegistryView;
  readonly #opts: {
    federation: string;
    coordinator: string;
    subject: string;
    log: Logger;
    shared?: SharedLogReads;
  };
  #position = { sequence: 0, hash: new Uint8Array(32) as Uint8Array };
  #lastRound = 0;
  #openRound: number | undefined;
  #syncing: Promise<void> | undefined;
  #again = false;
  #subscription: TransportSubscription | undefined;

  constructor(
    transport: NatsTransport,
    view: RegistryView,
    opts: { federation: string; coordinator: string; subject: string; log: Logger; shared?: SharedLogReads },
  ) {
    this.#transport = transport;
    this.#view = view;
    this.#opts = opts;
  }

  async start(): Promise<void> {
    this.#subscription = this.#transport.subscribe(
      this.#opts.subject,
      async () => {
        await this.sync();
        return undefined;
      },
      { onError: () => undefined, maxMessageBytes: 64 * 1024, rateLimit: { perSecond: 10, burst: 20 } },
    );
    await this.#subscription.ready();
    await this.sync();
  }

  /** Reads the entries after the last one read; a call during a read makes it read once more. */
  sync(): Promise<void> {
    if (this.#syncing !== undefined) {
      this.#again = true;
      return this.#syncing;
    }
    this.#syncing = (async () => {
      do {
        this.#again = false;
        try {
          await this.#read();
        } catch (err) {
          this.#opts.log.warn({ err }, 'registry changes not read from the log');
        }
      } while (this.#again);
    })().finally(() => {
      this.#syncing = undefined;
    });
    return this.#syncing;
  }

  async #read(): Promise<void> {
    const view = this.#view;
    const reader = await openLogReader(this.#transport.connection, {
      federation: this.#opts.federation,
      coordinator: this.#opts.coordinator,
      keys: (id) => view.current(id),
      ...(this.#opts.shared === undefined ? {} : { shared: this.#opts.shared }),
    });
    for await (const entry of reader.entries(this.#position)) {
      const r = entry.record;
      if (r.roundOpen) {
        this.#openRound = r.roundOpen.round;
        this.#lastRound = Math.max(this.#lastRound, r.roundOpen.round);
      } else if (r.decision) {
        this.#openRound = undefined;
        this.#lastRound = Math.max(this.#lastRound, r.decision.round);
      } else if (r.registryChange) {
        try {
          const change = openRegistryChange(r.registryChange, view.officerKey!);
          view.apply(change, this.#lastRound + 1, true, entry.sequence);
          this.#opts.log.info(
            { kind: change.kind, of: change.member, fromRound: change.fromRound, sequence: entry.sequence },
            'registry change',
          );
        } catch (err) {
          this.#opts.log.warn({ sequence: entry.sequence, err }, 'registry change in the log refused');
        }
      }
      this.#position = { sequence: entry.sequence, hash: entry.hash };
      view.setRound(this.#openRound ?? this.#lastRound + 1);
    }
  }

  async close(): Promise<void> {
    await this.#subscription?.unsubscribe().catch(() => undefined);
    await this.#syncing;
  }
}

/**
 * The slot cipher of a federation: its CKKS context in `he` mode (threshold CKKS's with
 * `crypto.keys: threshold`), the plain slot format of the same geometry in `plain` mode
 * (`federation.mode`).
 */
export async function laneContextOf(config: CohortConfig): Promise<LaneContext> {
  const params = ckksParamsOf(config);
  if (config.federation.mode === 'plain') return new PlainLaneContext(params);
  if (config.crypto.keys === 'threshold') {
    return new ThresholdLaneContext(await getThresholdContext(DEFAULT_THRESHOLD_PARAMS));
  }
  return getCkksContext(params);
}

/** The CKKS parameter set a federation's configuration names (`crypto.ckks`). */
export function ckksParamsOf(config: CohortConfig): CkksParams {
  return {
    polyModulusDegree: config.crypto.ckks.polyModulusDegree as 4096 | 8192 | 16384,
    coeffModulus: config.crypto.ckks.coeffModulus,
    scaleBits: config.crypto.ckks.scaleBits,
    exactBits: config.crypto.ckks.exactBits,
  };
}
