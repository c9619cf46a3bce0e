// Client-side TLS/NKEY options from files: secrets are mode-checked, URLs must match the TLS choice,
// and certificates issued for the federation verify against its CA.
import { X509Certificate } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createUser } from '@nats-io/nkeys';
import { afterAll, describe, expect, it } from 'vitest';
import { CohortError } from '../../src/errors/index.ts';
import {
  assertServerUrls,
  createCertificateAuthority,
  generateTlsKeyPair,
  issueCertificate,
  natsAuthOptions,
  renderServerConfig,
} from '../../src/transport/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-connect-opts-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const code = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    if (err instanceof CohortError) return `${err.code}: ${err.message}`;
    throw err;
  }
  throw new Error('expected a CohortError');
};

function file(name: string, text: string | Uint8Array, mode = 0o600): string {
  const path = join(dir, name);
  writeFileSync(path, text, { mode });
  chmodSync(path, mode);
  return path;
}

describe('natsAuthOptions', () => {
  const seed = file('m.nk', createUser().getSeed());

  it('builds an NKEY authenticator from an owner-only seed file, and refuses a readable one', () => {
    expect(typeof natsAuthOptions({ nkeySeedFile: seed }).authenticator).toBe('function');
    const open = file('open.nk', createUser().getSeed(), 0o644);
    expect(code(() => natsAuthOptions({ nkeySeedFile: open }))).toMatch(
      new RegExp(`^KEY_FILE_PERMISSIONS: .*${open}.*0o644`),
    );
    expect(code(() => natsAuthOptions({ nkeySeedFile: join(dir, 'missing.nk') }))).toMatch(
      /^KEY_FILE_UNREADABLE/,
    );
  });

  it('refuses a file that is not a user seed, and a seed with a creds file', () => {
    const account = file('acct.nk', 'SAAGNJOZTRPYYHG3ZDIKWCKN5QKK6J3ZC5LEZRUSABPLSDLCXB5YPBG3DQ');
    expect(code(() => natsAuthOptions({ nkeySeedFile: account }))).toMatch(/^INVALID_ARGUMENT: .*user seed/);
    expect(code(() => natsAuthOptions({ nkeySeedFile: seed, credentials: seed }))).toMatch(/not both/);
    const creds = file('open.creds', 'x', 0o640);
    expect(code(() => natsAuthOptions({ credentials: creds }))).toMatch(/^KEY_FILE_PERMISSIONS/);
  });

  it('reads TLS files, the key through the secret-file check', () => {
    const ca = createCertificateAuthority();
    const kp = generateTlsKeyPair();
    const cert = file(
      'm.crt',
      issueCertificate(ca, { commonName: 'm', publicKey: kp.publicKeyPem, usage: 'client' }),
      0o644,
    );
    const caFile = file('ca.crt', ca.certPem, 0o644);
    const key = file('m.key', kp.privateKeyPem);
    const { tls } = natsAuthOptions({ tls: { ca: caFile, cert, key } });
    expect(tls?.ca).toBe(ca.certPem);
    expect(tls?.key).toBe(kp.privateKeyPem);
    chmodSync(key, 0o604);
    expect(code(() => natsAuthOptions({ tls: { ca: caFile, cert, key } }))).toMatch(/^KEY_FILE_PERMISSIONS/);
    expect(code(() => natsAuthOptions({ tls: { ca: caFile, cert } }))).toMatch(/together/);
  });
});

describe('assertServerUrls', () => {
  it('wants tls:// exactly when TLS files are given', () => {
    expect(() => assertServerUrls(['tls://a:4222', 'tls://b:4222'], true)).not.toThrow();
    expect(() => assertServerUrls(['nats://a:4222'], false)).not.toThrow();
    expect(code(() => assertServerUrls(['tls://a:4222', 'nats://b:4222'], true))).toMatch(/servers\[1\]/);
    expect(code(() => assertServerUrls(['tls://a:4222'], false))).toMatch(/plaintext/);
    expect(code(() => assertServerUrls([], false))).toMatch(/non-empty/);
    expect(code(() => assertServerUrls(['http://a'], false))).toMatch(/NATS URL/);
  });
});

describe('certificates', () => {
  const ca = createCertificateAuthority('test CA', 30);
  const caCert = new X509Certificate(ca.certPem);

  it('issues a server certificate for IPs and names, and a client certificate, signed by the CA', () => {
    const server = new X509Certificate(
      issueCertificate(ca, {
        commonName: 'nats-server',
        publicKey: generateTlsKeyPair().publicKeyPem,
        usage: 'server',
        hosts: ['127.0.0.1', 'nats.example.org'],
        days: 10,
      }),
    );
    expect(caCert.ca).toBe(true);
    expect(server.ca).toBe(false);
    expect(server.verify(caCert.publicKey)).toBe(true);
    expect(server.checkIssued(caCert)).toBe(true);
    expect(server.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(server.checkHost('nats.example.org')).toBe('nats.example.org');
    expect(server.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    const client = new X509Certificate(
      issueCertificate(ca, {
        commonName: 'site-1',
        publicKey: generateTlsKeyPair().publicKeyPem,
        usage: 'client',
      }),
    );
    expect(client.subject).toBe('CN=site-1');
    expect(client.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    expect(client.verify(caCert.publicKey)).toBe(true);
    expect(client.verify(new X509Certificate(createCertificateAuthority().certPem).publicKey)).toBe(false);
  });

  it('refuses a server without hosts, a bad host, a mismatched CA key and a non-P-256 key', () => {
    const publicKey = generateTlsKeyPair().publicKeyPem;
    expect(code(() => issueCertificate(ca, { commonName: 's', publicKey, usage: 'server' }))).toMatch(/host/);
    expect(
      code(() => issueCertificate(ca, { commonName: 's', publicKey, usage: 'server', hosts: ['a b'] })),
    ).toMatch(/hosts\[0\]/);
    const other = createCertificateAuthority();
    expect(
      code(() =>
        issueCertificate(
          { certPem: ca.certPem, keyPem: other.keyPem },
          { commonName: 's', publicKey, usage: 'client' },
        ),
      ),
    ).toMatch(/does not match/);
    expect(code(() => issueCertificate(ca, { commonName: 's', publicKey: 'nope', usage: 'client' }))).toMatch(
      /publicKey/,
    );
  });
});

describe('renderServerConfig', () => {
  it('requires client certificates and quotes every path', () => {
    const text = renderServerConfig({
      listen: '127.0.0.1:4333',
      tls: { cert: '/etc/nats/server.crt', key: '/etc/nats/server "key".pem', ca: '/etc/nats/ca.crt' },
      jetStreamStoreDir: '/var/lib/nats',
      authorization: 'authorization { users = [] }\n',
    });
    expect(text).toContain('verify: true');
    expect(text).toContain('key_file: "/etc/nats/server \\"key\\".pem"');
    expect(text).toContain('jetstream { store_dir: "/var/lib/nats" }');
    expect(
      code(() =>
        renderServerConfig({ listen: 'x', tls: { cert: 'a', key: 'b', ca: 'c' }, authorization: '' }),
      ),
    ).toMatch(/listen/);
  });
});
