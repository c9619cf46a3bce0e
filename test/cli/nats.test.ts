// A deployment by hand with `cohort nats`: each member generates its keys, the officer signs the
// registry, the operator creates the CA, certifies the members and writes nats.conf from the
// registry; a real nats-server runs that file, and members connect with mutual TLS and their NKEY
// while plaintext and unknown clients, and a configured member the registry does not list, are
// refused.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadPublicKey, loadSigningKeyPair } from '../../crypto/signature/index.ts';
import { loadConfig } from '../../src/config/index.ts';
import { registryFromPublicFiles, signRegistry, writeRegistry } from '../../src/registry/index.ts';
import { memberNatsFiles } from '../../src/services/index.ts';
import { connectTransport, federationSubjects } from '../../src/transport/index.ts';
import { findNatsServer, freePort } from '../helpers/nats-server.ts';
import { cohort } from '../helpers/run-cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-nats-cli-'));
const keys = join(dir, 'keys');
const tlsDir = join(dir, 'tls');
const MEMBERS = ['coordinator', 'agg-1', 'site-1', 'site-2', 'site-3'];
/** Configured, but left out of the registry (to be enrolled later): it gets no NATS user. */
const UNENROLLED = 'site-3';
const mode = (file: string) => statSync(file).mode & 0o777;
let port: number;
let server: ChildProcess | undefined;

/** `cohort ...args`, expecting success. */
async function ok(...args: string[]) {
  const r = await cohort(...args);
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return r.stdout;
}

/** federation.yaml of the by-hand federation, with `registry` pinned once the officer made it. */
function writeFederationConfig(registry?: { path: string; sha256: string }): void {
  writeFileSync(
    join(dir, 'federation.yaml'),
    stringify({
      federation: { id: 'byhand' },
      nats: { servers: [`tls://127.0.0.1:${port}`], timeoutMs: 2000, maxRetry: 1 },
      members: {
        coordinator: 'coordinator',
        aggregators: [{ id: 'agg-1' }],
        sites: [{ id: 'site-1' }, { id: 'site-2' }, { id: UNENROLLED }],
        keysDir: keys,
        ...(registry === undefined ? {} : { registry }),
      },
    }),
  );
}

beforeAll(async () => {
  port = await freePort();
  mkdirSync(keys);
  writeFederationConfig();
});

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server!.once('exit', r));
    server.kill('SIGTERM');
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('cohort nats', () => {
  it('keys: each member writes its NKEY seed and TLS key 0600 and public files to hand over', async () => {
    for (const id of MEMBERS) {
      const out = await ok('nats', 'keys', '--member', id, '--dir', keys);
      expect(out).toMatch(/^nkey: U[A-Z2-7]{55}\n/);
      expect(mode(join(keys, `${id}.nk`))).toBe(0o600);
      expect(mode(join(keys, `${id}.tls.key`))).toBe(0o600);
      expect(readFileSync(join(keys, `${id}.nk.pub`), 'utf8')).toBe(`${out.slice(6, 62)}\n`);
      expect(readFileSync(join(keys, `${id}.tls.pub`), 'utf8')).toMatch(/^-----BEGIN PUBLIC KEY-----/);
    }
    const again = await cohort('nats', 'keys', '--member', 'site-1', '--dir', keys);
    expect(again.status).not.toBe(0);
    expect(again.stderr).toMatch(/KEY_FILE_EXISTS/);
  });

  it('ca and cert: the operator creates the CA and certifies every member', async () => {
    const out = await ok('nats', 'ca', '--dir', tlsDir, '--host', '127.0.0.1', '--host', 'localhost');
    expect(out).toContain('ca.crt');
    expect(mode(join(tlsDir, 'ca.key.pem'))).toBe(0o600);
    expect(mode(join(tlsDir, 'server.key.pem'))).toBe(0o600);
    for (const id of MEMBERS) {
      await ok(
        'nats',
        'cert',
        '--ca-dir',
        tlsDir,
        '--member',
        id,
        '--public-key',
        join(keys, `${id}.tls.pub`),
        '--out',
        join(keys, `${id}.tls.crt`),
      );
    }
    writeFileSync(join(keys, 'ca.crt'), readFileSync(join(tlsDir, 'ca.crt')));
  });

  it('config: refuses a configuration that pins no registry', async () => {
    const r = await cohort('nats', 'config', '--config', join(dir, 'federation.yaml'), '--tls-dir', tlsDir);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/members\.registry: required/);
  });

  it('config: writes nats.conf from the registry that nats-server runs; members connect with mTLS + NKEY only', async () => {
    // Each member's signing key (a site's KEM key); the officer signs the registry of all but site-3.
    for (const id of MEMBERS) {
      await ok('keys', 'signing', 'generate', '--out', join(keys, id));
      if (id.startsWith('site-')) await ok('keys', 'kem', 'generate', '--out', join(keys, id));
    }
    await ok('keys', 'signing', 'generate', '--out', join(dir, 'officer'));
    const officer = loadSigningKeyPair(join(dir, 'officer.key'));
    const pin = writeRegistry(
      join(keys, 'registry.bin'),
      signRegistry(
        registryFromPublicFiles({
          federation: 'byhand',
          members: [
            { id: 'coordinator', role: 'coordinator' },
            { id: 'agg-1', role: 'aggregator' },
            { id: 'site-1', role: 'site' },
            { id: 'site-2', role: 'site' },
          ],
          dir: keys,
          officerKey: loadPublicKey(join(dir, 'officer.pub')),
        }),
        officer,
      ),
    );
    writeFederationConfig(pin);
    const conf = join(dir, 'nats.conf');
    const written = await cohort(
      'nats',
      'config',
      '--config',
      join(dir, 'federation.yaml'),
      '--out',
      conf,
      '--tls-dir',
      tlsDir,
      '--listen',
      `127.0.0.1:${port}`,
      '--store-dir',
      join(dir, 'js'),
    );
    expect(written.status, written.stderr).toBe(0);
    expect(written.stdout).toContain('nats-server --signal reload');
    expect(written.stderr).toContain('users from the pinned registry alone');
    expect(written.stderr).toContain(`no user for ${UNENROLLED}: not in the member registry (not enrolled)`);
    const text = readFileSync(conf, 'utf8');
    expect(text).not.toContain(readFileSync(join(keys, `${UNENROLLED}.nk.pub`), 'utf8').trim());
    expect(text).toContain('verify: true');
    expect(text).toContain(`nkey: "${readFileSync(join(keys, 'site-1.nk.pub'), 'utf8').trim()}"`);
    expect(text).toMatch(/allow_responses: \{ max: 1, expires: "60000ms" \}/);
    expect(text).not.toMatch(/password|_INBOX\.>/);
    const exe = findNatsServer();
    server = spawn(exe, ['-c', conf, '-l', join(dir, 'nats.log')], { stdio: 'ignore' });

    const config = loadConfig(join(dir, 'federation.yaml'), { env: {} });
    const S = federationSubjects('byhand');
    const as = async (id: string) => {
      for (let i = 0; ; i++) {
        try {
          return await connectTransport({
            servers: [...config.nats.servers],
            name: id,
            inboxPrefix: S.inboxPrefix(id),
            timeoutMs: 2000,
            maxRetry: 1,
            ...memberNatsFiles(config, id),
          });
        } catch (err) {
          if (i > 50) throw err;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    };
    const agg = await as('agg-1');
    const site = await as('site-1');
    // The configured member the registry does not list has no user.
    await expect(
      connectTransport({
        servers: [...config.nats.servers],
        name: UNENROLLED,
        timeoutMs: 2000,
        maxRetry: 1,
        ...memberNatsFiles(config, UNENROLLED),
      }),
    ).rejects.toMatchObject({ code: 'TRANSPORT_CONNECT' });
    try {
      const sub = agg.subscribe(S.updatesFor('agg-1'), async () => new TextEncoder().encode('ack'));
      await sub.ready();
      const reply = await site.request(S.update('agg-1', 'site-1'), new TextEncoder().encode('u'));
      expect(new TextDecoder().decode(reply)).toBe('ack');
      await expect(site.publish(S.update('agg-1', 'site-2'), new Uint8Array(1))).rejects.toMatchObject({
        code: 'TRANSPORT_PERMISSION',
      });
    } finally {
      await site.close();
      await agg.close();
    }
    // Without the client certificate, the member's own NKEY is not enough.
    await expect(
      connectTransport({
        servers: [...config.nats.servers],
        name: 'site-1',
        tls: { ca: join(keys, 'ca.crt') },
        nkeySeedFile: join(keys, 'site-1.nk'),
        timeoutMs: 2000,
      }),
    ).rejects.toMatchObject({ code: 'TRANSPORT_CONNECT' });
  });
});
