// Issue 22, breaks 9, 11 and 12 (credentials), against a real local deployment (key ceremony,
// registry, envelopes) and a real nats-server run from `cohort nats config`'s output:
//   9  an envelope for a site made by someone who only knows its public KEM key, or by another
//      registered site, holding another secret;
//   11 a revoked site's NATS user after the revocation is logged;
//   12 the admin API in clear on a network address, a configuration without the registry pin, a
//      secret file owned by another user or in a folder others may write.
// Each outcome is written to docs/security.md's `credentials` table (COHORT_WRITE_ATTACKS=1).
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { CkksKeyset, getCkksContext } from '../../crypto/ckks/index.ts';
import { loadKemPublicKey, sealEnvelope, wrapSecret } from '../../crypto/kem/index.ts';
import {
  generateSigningKeyPair,
  loadSigningKeyPair,
  saveSigningKeyPair,
} from '../../crypto/signature/index.ts';
import { serveAdminApi } from '../../src/admin/index.ts';
import { loadConfig, parseConfig } from '../../src/config/index.ts';
import { CohortError } from '../../src/errors/index.ts';
import { RegistryView, sealRegistryChange } from '../../src/registry/index.ts';
import { ensureLogStream, LOG_ORIGIN, openLogWriter } from '../../src/services/federation-log/index.ts';
import {
  CKKS_KEY_PURPOSE,
  ckksParamsOf,
  createLocalDeployment,
  DATA_KEY_PURPOSE,
  type LocalDeployment,
  loadPinnedRegistry,
  loadSiteDataKey,
  loadSiteKeyset,
  type MemberContext,
  memberConnectOptions,
  openMember,
} from '../../src/services/index.ts';
import { envelopeTrust } from '../../src/services/key-ceremony.ts';
import { federationSubjects, natsAuthOptions } from '../../src/transport/index.ts';
import { fixture } from '../admin/admin-fixture.ts';
import { findNatsServer, freePort } from '../helpers/nats-server.ts';
import { cohort } from '../helpers/run-cli.ts';
import { AttackLedger, holds, refusedAs } from './attack-ledger.ts';

const F = 'cred';
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/** Chown to another user needs root; the owner row is observed (and the table checked) as root only. */
const ROOT = process.getuid?.() === 0;
const ledger = new AttackLedger('credentials', [
  'Issue 22 item',
  'Attack on key files, envelopes, NATS users and the admin API',
  'Outcome',
]);
let root: string;
let dep: LocalDeployment;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'cohort-credentials-'));
  dep = await createLocalDeployment({
    dir: join(root, 'fed'),
    federation: F,
    aggregators: 1,
    sites: 3,
    // Item 9 attacks the shared key's envelopes (`site.ckks.env`); the threshold scheme's sealed
    // shares are attacked in threshold-reshare.test.ts and threshold-committee.test.ts.
    overrides: { learning: { model: 'logreg' }, log: { level: 'error' }, crypto: { keys: 'shared' } },
  });
}, 120_000);

afterAll(async () => {
  await dep?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
});

/** Resolves once `cond()` holds (polls every 20 ms; fails after 5 s). */
async function waitUntil(cond: () => boolean): Promise<void> {
  for (let i = 0; !cond(); i++) {
    if (i > 250) throw new Error('condition not met in 5 s');
    await sleep(20);
  }
}

/** The stable code `fn` throws (its message too), or 'accepted'. */
function outcome(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof CohortError) return `${err.code}: ${err.message}`;
    throw err;
  }
  return 'accepted';
}

describe('9: key envelopes', () => {
  /** site-2's envelope replaced by `bytes` while `fn` runs (its outcome), then put back. */
  async function substituted(file: string, bytes: Uint8Array, fn: () => unknown): Promise<string> {
    const path = join(dep.config.members!.keysDir, 'public', file);
    const genuine = readFileSync(path);
    writeFileSync(path, bytes);
    try {
      return outcome(fn);
    } finally {
      writeFileSync(path, genuine);
    }
  }

  it('an envelope made with only site-2\u2019s public KEM key, or by another site, is refused', async () => {
    const keysDir = dep.config.members!.keysDir;
    const context = await getCkksContext(ckksParamsOf(dep.config));
    const registryView = RegistryView.fromRegistry(loadPinnedRegistry(dep.config)!.registry);
    const trust = envelopeTrust({ config: dep.config, registryView });
    const load = () => loadSiteKeyset(context, keysDir, 'site-2', trust).delete();
    // Who made an envelope is checked whether or not the configuration pins the fingerprints.
    const unpinned = { ...trust, fingerprints: {} };
    const loadUnpinned = () => loadSiteKeyset(context, keysDir, 'site-2', unpinned).delete();
    // The attacker's own CKKS key, for site-2, knowing only its public KEM key.
    const attacker = CkksKeyset.create(context);
    const secret = attacker.exportSecretKey();
    attacker.delete();
    const kemPub = loadKemPublicKey(join(keysDir, 'public', 'site-2.kem.pub'));
    const ctx = { federation: F, recipient: 'site-2', purpose: CKKS_KEY_PURPOSE };
    const bare = await substituted('site-2.ckks.env', wrapSecret(kemPub, secret, ctx), load);
    const outsiderKey = generateSigningKeyPair('falcon-512');
    const site1KeyId = registryView.current('site-1')!.keyId;
    const forged = await substituted(
      'site-2.ckks.env',
      // Under site-1's name and key id (public in the registry), signed with the outsider's key.
      sealEnvelope({ id: 'site-1', key: { ...outsiderKey, keyId: site1KeyId } }, kemPub, secret, ctx),
      loadUnpinned,
    );
    const stranger = await substituted(
      'site-2.ckks.env',
      sealEnvelope({ id: 'mallory', key: outsiderKey }, kemPub, secret, ctx),
      loadUnpinned,
    );
    // A registered site (site-3, its own signing key) hands site-2 another key.
    const site3 = loadSigningKeyPair(join(keysDir, 'site-3', 'site-3.key'));
    const insider = await substituted(
      'site-2.ckks.env',
      sealEnvelope({ id: 'site-3', key: site3 }, kemPub, secret, ctx),
      load,
    );
    const insiderData = await substituted(
      'site-2.data.env',
      sealEnvelope({ id: 'site-3', key: site3 }, kemPub, new Uint8Array(32).fill(7), {
        ...ctx,
        purpose: DATA_KEY_PURPOSE,
      }),
      () => loadSiteDataKey(keysDir, 'site-2', trust),
    );
    const genuine = outcome(load);
    ledger.record(
      9,
      'under a shared key (`crypto.keys: shared`), an outsider who knows site-2\u2019s public KEM key writes its `site-2.ckks.env` (its own CKKS key)',
      [
        refusedAs('ENVELOPE_UNSIGNED', bare, 'site-2'),
        holds('the error names the file', bare.includes('site-2.ckks.env')),
      ],
    );
    ledger.record(
      9,
      'the same envelope signed with the outsider\u2019s key, under site-1\u2019s name and key id, or its own name (no fingerprint pinned)',
      [refusedAs('ENVELOPE_SIGNATURE_INVALID', forged), refusedAs('ENVELOPE_MAKER_REFUSED', stranger)],
    );
    ledger.record(
      9,
      'a registered site (site-3) signs envelopes of another CKKS key and data key for site-2',
      [
        refusedAs('KEY_FINGERPRINT_MISMATCH', insider),
        refusedAs('KEY_FINGERPRINT_MISMATCH', insiderData),
        holds('site-2\u2019s genuine envelope still opens', genuine === 'accepted'),
      ],
    );
  });
});

describe('12: secret files', () => {
  /** A signing key pair file (0600) in a fresh folder of `mode`. */
  function keyFile(name: string, mode: number): string {
    const folder = join(root, name);
    mkdirSync(folder);
    chmodSync(folder, mode);
    const file = join(folder, 'm.key');
    saveSigningKeyPair(file, generateSigningKeyPair('falcon-512'));
    return file;
  }

  it('a secret file in a folder others may write, or its NKEY seed, is refused', () => {
    const loose = keyFile('loose', 0o777);
    const group = keyFile('group', 0o770);
    const seed = join(root, 'loose', 'x.nk');
    writeFileSync(seed, readFileSync(join(dep.config.members!.keysDir, 'site-1', 'site-1.nk')), {
      mode: 0o600,
    });
    const key = outcome(() => loadSigningKeyPair(loose));
    const groupKey = outcome(() => loadSigningKeyPair(group));
    const nkey = outcome(() => natsAuthOptions({ nkeySeedFile: seed }));
    const tight = outcome(() => loadSigningKeyPair(keyFile('tight', 0o700)));
    ledger.record(
      12,
      'a secret key file (0600) in a folder of mode 0777 or 0770: whoever may write it can replace the key',
      [
        refusedAs('KEY_FOLDER_PERMISSIONS', key),
        refusedAs('KEY_FOLDER_PERMISSIONS', groupKey),
        refusedAs('KEY_FOLDER_PERMISSIONS', nkey, 'the NATS client options'),
        holds(
          'the error names the file and the folder\u2019s mode',
          key.includes(loose) && key.includes('0o777'),
        ),
        holds('the same file in a 0700 folder loads', tight === 'accepted'),
      ],
    );
  });

  it.runIf(ROOT)('a secret file owned by another user is refused', () => {
    const file = keyFile('owner', 0o700);
    chownSync(file, 65534, 65534);
    const seen = outcome(() => loadSigningKeyPair(file));
    chownSync(join(root, 'owner'), 65534, 65534);
    chownSync(file, 0, 0);
    const folder = outcome(() => loadSigningKeyPair(file));
    ledger.record(
      12,
      'a secret key file (0600) owned by another user (uid 65534), or in a folder that user owns',
      [
        refusedAs('KEY_FILE_OWNER', seen),
        refusedAs('KEY_FOLDER_PERMISSIONS', folder),
        holds(
          'the error names the file and the owner\u2019s uid',
          seen.includes(file) && seen.includes('65534'),
        ),
      ],
    );
  });
});

describe('12: configuration', () => {
  it('a members section without the registry pin is refused', () => {
    const seen = outcome(() =>
      parseConfig({
        federation: { id: F },
        members: { aggregators: [{ id: 'agg-1' }], sites: [{ id: 'site-1' }] },
      }),
    );
    const bootstrap = outcome(() =>
      parseConfig(
        { federation: { id: F }, members: { aggregators: [{ id: 'agg-1' }], sites: [{ id: 'site-1' }] } },
        { unpinnedRegistry: true },
      ),
    );
    ledger.record(
      12,
      'a configuration whose members section has no registry pin (members would trust any `.pub` in their folder)',
      [
        refusedAs('CONFIG_INVALID', seen),
        holds('the error names `members.registry`', /members\.registry: required/.test(seen)),
        holds('only the bootstrap read of `cohort registry create` accepts it', bootstrap === 'accepted'),
      ],
    );
  });

  it('an admin API on a non-loopback address without TLS is refused', async () => {
    const seen = outcome(() => parseConfig({ federation: { id: F }, admin: { host: '0.0.0.0', port: 0 } }));
    const optOut = outcome(() =>
      parseConfig({
        federation: { id: F },
        admin: { host: '0.0.0.0', port: 0, insecurePlaintextOnNetwork: true },
      }),
    );
    const admin = parseConfig({ federation: { id: F }, admin: { host: '127.0.0.1', port: 0 } }).admin!;
    let served: Awaited<ReturnType<typeof serveAdminApi>> | undefined;
    let listen = 'accepted';
    try {
      served = await serveAdminApi({ ...admin, host: '0.0.0.0' }, fixture().deps);
    } catch (err) {
      listen = err instanceof CohortError ? `${err.code}: ${err.message}` : String(err);
    }
    await served?.close();
    const loopback = await serveAdminApi(admin, fixture().deps);
    await loopback.close();
    ledger.record(12, 'the admin API configured on 0.0.0.0 in plain HTTP (no `admin.tls`)', [
      refusedAs('CONFIG_INVALID', seen),
      holds('the error names `admin.tls`', /admin\.tls: required/.test(seen)),
      refusedAs('CONFIG_INVALID', listen, '`serveAdminApi` for a section built by hand'),
      holds(
        'served only with the loudly named `admin.insecurePlaintextOnNetwork: true`, or on 127.0.0.1',
        optOut === 'accepted' && loopback.url.startsWith('http://127.0.0.1:'),
      ),
    ]);
  });
});

describe('11: NATS access after a revocation', () => {
  let server: ChildProcess | undefined;
  let configPath: string;
  let conf: string;
  let port: number;
  afterAll(() => {
    server?.kill('SIGKILL');
  });

  /** `cohort nats config` for the federation served by our own nats-server (extra flags appended). */
  const natsConfig = (...extra: string[]) =>
    cohort(
      'nats',
      'config',
      '--config',
      configPath,
      '--tls-dir',
      join(dep.dir, 'nats'),
      '--listen',
      `127.0.0.1:${port}`,
      '--store-dir',
      join(root, 'js'),
      '--out',
      conf,
      ...extra,
    );

  /** Connects as `id` with its real credentials (no reconnect): the connection, or the error. */
  async function connectAs(id: string): Promise<NatsConnection | Error> {
    const config = loadConfig(configPath, { env: {} });
    try {
      return await connect({ ...memberConnectOptions(config, id), reconnect: false, timeout: 3000 });
    } catch (err) {
      return err as Error;
    }
  }

  it('a revoked site keeps no NATS user: regenerated nats.conf, reloaded server', async () => {
    port = await freePort();
    const yaml = parse(readFileSync(dep.configPath, 'utf8')) as Record<string, Record<string, unknown>>;
    yaml['nats'] = { ...yaml['nats'], servers: [`tls://127.0.0.1:${port}`] };
    configPath = join(root, 'own-server.yaml');
    writeFileSync(configPath, stringify(yaml));
    conf = join(root, 'nats.conf');
    const first = await natsConfig();
    expect(first.status, first.stderr).toBe(0);
    server = spawn(findNatsServer(), ['-c', conf], { stdio: 'ignore' });
    const config = loadConfig(configPath, { env: {} });
    let coordinator: MemberContext | undefined;
    for (let i = 0; coordinator === undefined; i++) {
      try {
        coordinator = await openMember(config, 'coordinator');
      } catch (err) {
        if (i > 50) throw err;
        await sleep(100);
      }
    }
    // The officer revokes site-3 from round 1: the coordinator logs the signed change.
    const nc = coordinator.transport.connection;
    await ensureLogStream(await jetstreamManager(nc), { federation: F, replicas: 1, maxBytes: 1 << 24 });
    const writer = await openLogWriter(nc, {
      federation: F,
      signer: 'coordinator',
      signing: coordinator.signing,
      start: LOG_ORIGIN,
    });
    const officer = loadSigningKeyPair(dep.officer.key);
    await writer.append({
      registryChange: sealRegistryChange(
        {
          federation: F,
          kind: 'revoke',
          member: 'site-3',
          role: 'site',
          signingKey: undefined,
          kemKey: undefined,
          nkey: undefined,
          fromRound: 1,
          issuedUnixMs: Date.now(),
          reason: 'host compromised',
        },
        officer,
      ),
    });
    // Before the regeneration the revoked site still connects and hears every PREPARE.
    const prepare = federationSubjects(F).prepare;
    const before = await connectAs('site-3');
    expect(before).not.toBeInstanceOf(Error);
    const held = before as NatsConnection;
    const heard: string[] = [];
    held.subscribe(prepare, {
      callback: (_e, m) => {
        heard.push(m.string());
      },
    });
    await held.flush();
    nc.publish(prepare, 'prepare-1');
    await waitUntil(() => heard.length === 1);
    const closed = held.closed().then(() => true);

    const regenerated = await natsConfig('--as', 'auditor-1');
    expect(regenerated.status, regenerated.stderr).toBe(0);
    const nkey = readFileSync(join(dep.config.members!.keysDir, 'public', 'site-3.nk.pub'), 'utf8').trim();
    const text = readFileSync(conf, 'utf8');
    server!.kill('SIGHUP');
    // The reloaded server drops the revoked user's connection and refuses a new one.
    const dropped = await Promise.race([closed, sleep(10_000).then(() => false)]);
    nc.publish(prepare, 'prepare-2');
    await nc.flush();
    const after = await connectAs('site-3');
    const honest = await connectAs('site-1');
    const honestConnects = !(honest instanceof Error);
    if (honestConnects) await honest.close();
    await coordinator.close();
    ledger.record(
      11,
      'site-3 is revoked (an officer-signed log record) and keeps its NATS user, hearing PREPAREs',
      [
        holds(
          '`cohort nats config --as auditor-1` reads the log\u2019s registry changes: site-3 has no user in the regenerated nats.conf',
          !text.includes(nkey) && regenerated.stderr.includes('no user for site-3: revoked from round 1'),
        ),
        holds('after `SIGHUP` (reload) nats-server closes site-3\u2019s connection', dropped),
        refusedAs(
          'Authorization Violation',
          after instanceof Error ? after.message : 'connected',
          'nats-server',
        ),
        holds('site-3 heard no PREPARE after the reload', heard.length === 1),
        holds('site-1 still connects', honestConnects),
      ],
    );
  }, 60_000);
});

describe('the credentials table', () => {
  it.runIf(ROOT)('docs/security.md lists what the attacks above observed', () => {
    ledger.verify();
  });
});
