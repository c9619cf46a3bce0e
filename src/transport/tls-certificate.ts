import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
  sign,
  X509Certificate,
} from 'node:crypto';
import { isIP } from 'node:net';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import {
  AlgorithmIdentifier,
  AttributeTypeAndValue,
  AttributeValue,
  AuthorityKeyIdentifier,
  BasicConstraints,
  Certificate,
  ExtendedKeyUsage,
  Extension,
  Extensions,
  GeneralName,
  id_ce_authorityKeyIdentifier,
  id_ce_basicConstraints,
  id_ce_extKeyUsage,
  id_ce_keyUsage,
  id_ce_subjectAltName,
  id_ce_subjectKeyIdentifier,
  id_kp_clientAuth,
  id_kp_serverAuth,
  KeyIdentifier,
  KeyUsage,
  KeyUsageFlags,
  Name,
  RelativeDistinguishedName,
  SubjectAlternativeName,
  SubjectKeyIdentifier,
  SubjectPublicKeyInfo,
  TBSCertificate,
  Validity,
  Version,
} from '@peculiar/asn1-x509';
import { InvalidArgumentError } from '../errors/index.ts';

/** ecdsa-with-SHA256 (RFC 5758): the signature of every certificate issued here. */
const ECDSA_WITH_SHA256 = '1.2.840.10045.4.3.2';
/** id-at-commonName. */
const COMMON_NAME = '2.5.4.3';
const DAY_MS = 86_400_000;

/** A certificate authority: its certificate and private key, both PEM. */
export interface CertificateAuthority {
  readonly certPem: string;
  /** PKCS#8 PEM of the CA's ECDSA P-256 key: secret. */
  readonly keyPem: string;
}

/** A fresh ECDSA P-256 key pair as PEM (PKCS#8 private key, SPKI public key). */
export interface TlsKeyPair {
  /** Secret: write it owner-only. */
  readonly privateKeyPem: string;
  readonly publicKeyPem: string;
}

/** What {@link issueCertificate} certifies. */
export interface CertificateRequest {
  /** Subject common name (a member id, or `nats-server`). */
  readonly commonName: string;
  /** The subject's public key (SPKI PEM or a KeyObject). */
  readonly publicKey: string | KeyObject;
  /** `client`: TLS client authentication (members); `server`: TLS server (nats-server). */
  readonly usage: 'client' | 'server';
  /** Subject alternative names: IP addresses and DNS names (required for a server). */
  readonly hosts?: readonly string[];
  /** Validity in days from now; default 825. */
  readonly days?: number;
}

function assertCommonName(name: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || !/^[A-Za-z0-9 ._-]{1,64}$/.test(value)) {
    throw new InvalidArgumentError(
      `${name} must be 1-64 characters of A-Z, a-z, 0-9, space, ".", "_" and "-"`,
      { details: { name } },
    );
  }
}

function assertDays(days: unknown): asserts days is number {
  if (typeof days !== 'number' || !Number.isInteger(days) || days < 1 || days > 36_500) {
    throw new InvalidArgumentError(`days must be an integer in [1, 36500], got ${String(days)}`, {
      details: { name: 'days' },
    });
  }
}

function commonName(cn: string): Name {
  return new Name([
    new RelativeDistinguishedName([
      new AttributeTypeAndValue({ type: COMMON_NAME, value: new AttributeValue({ utf8String: cn }) }),
    ]),
  ]);
}

function extension(extnID: string, critical: boolean, value: unknown): Extension {
  return new Extension({ extnID, critical, extnValue: new OctetString(AsnConvert.serialize(value)) });
}

/** RFC 5280 §4.2.1.2 method 1: SHA-1 of the subjectPublicKey bit string. */
function keyIdentifier(spki: SubjectPublicKeyInfo): ArrayBuffer {
  const digest = createHash('sha1').update(new Uint8Array(spki.subjectPublicKey)).digest();
  return digest.buffer.slice(digest.byteOffset, digest.byteOffset + digest.byteLength) as ArrayBuffer;
}

function spkiOf(key: string | KeyObject): SubjectPublicKeyInfo {
  let object: KeyObject;
  try {
    object = typeof key === 'string' ? createPublicKey(key) : key;
  } catch (cause) {
    throw new InvalidArgumentError('publicKey is not a PEM public key', {
      cause,
      details: { name: 'publicKey' },
    });
  }
  if (object.asymmetricKeyType !== 'ec' || object.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw new InvalidArgumentError('publicKey must be an ECDSA P-256 key', {
      details: { name: 'publicKey' },
    });
  }
  const der = object.type === 'private' ? createPublicKey(object) : object;
  return AsnConvert.parse(der.export({ type: 'spki', format: 'der' }), SubjectPublicKeyInfo);
}

function serialNumber(): ArrayBuffer {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0]! & 0x7f) | 0x40; // positive, 16 significant bytes
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + 16) as ArrayBuffer;
}

function signCertificate(tbs: TBSCertificate, signer: KeyObject): string {
  const tbsDer = Buffer.from(AsnConvert.serialize(tbs));
  const signature = sign('sha256', tbsDer, { key: signer, dsaEncoding: 'der' });
  const cert = new Certificate({
    tbsCertificate: tbs,
    signatureAlgorithm: new AlgorithmIdentifier({ algorithm: ECDSA_WITH_SHA256 }),
    signatureValue: signature.buffer.slice(
      signature.byteOffset,
      signature.byteOffset + signature.byteLength,
    ) as ArrayBuffer,
  });
  const der = Buffer.from(AsnConvert.serialize(cert));
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}

function validity(days: number): Validity {
  const now = Date.now();
  // A minute of slack for clocks a little behind the issuer's.
  return new Validity({ notBefore: new Date(now - 60_000), notAfter: new Date(now + days * DAY_MS) });
}

/** A fresh ECDSA P-256 key pair (a member's TLS client key, a server key). */
export function generateTlsKeyPair(): TlsKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

/**
 * Creates a self-signed certificate authority (ECDSA P-256, basic constraints CA with path length
 * 0: it signs end-entity certificates only) named `name`, valid `days` days (default 3650).
 */
export function createCertificateAuthority(name = 'cohort federation CA', days = 3650): CertificateAuthority {
  assertCommonName('name', name);
  assertDays(days);
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const spki = spkiOf(publicKey);
  const id = keyIdentifier(spki);
  const subject = commonName(name);
  const tbs = new TBSCertificate({
    version: Version.v3,
    serialNumber: serialNumber(),
    signature: new AlgorithmIdentifier({ algorithm: ECDSA_WITH_SHA256 }),
    issuer: subject,
    validity: validity(days),
    subject,
    subjectPublicKeyInfo: spki,
    extensions: new Extensions([
      extension(id_ce_basicConstraints, true, new BasicConstraints({ cA: true, pathLenConstraint: 0 })),
      extension(id_ce_keyUsage, true, new KeyUsage(KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign)),
      extension(id_ce_subjectKeyIdentifier, false, new SubjectKeyIdentifier(id)),
    ]),
  });
  return {
    certPem: signCertificate(tbs, privateKey),
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

/**
 * Issues an end-entity certificate signed by `ca`: ECDSA P-256 with SHA-256, key usage
 * digitalSignature, extended key usage clientAuth (members) or serverAuth (nats-server), and for a
 * server the subject alternative names `hosts` (IP addresses and DNS names).
 *
 * @returns the certificate, PEM.
 * @throws InvalidArgumentError for a bad name, host, public key or CA.
 */
export function issueCertificate(ca: CertificateAuthority, request: CertificateRequest): string {
  assertCommonName('commonName', request.commonName);
  const days = request.days ?? 825;
  assertDays(days);
  if (request.usage !== 'client' && request.usage !== 'server') {
    throw new InvalidArgumentError('usage must be "client" or "server"', { details: { name: 'usage' } });
  }
  const hosts = request.hosts ?? [];
  if (request.usage === 'server' && hosts.length === 0) {
    throw new InvalidArgumentError('a server certificate needs at least one host', {
      details: { name: 'hosts' },
    });
  }
  const names = hosts.map((host, i) => {
    if (typeof host === 'string' && isIP(host) !== 0) return new GeneralName({ iPAddress: host });
    if (typeof host === 'string' && /^(?=.{1,253}$)[A-Za-z0-9*]([A-Za-z0-9.-]*[A-Za-z0-9])?$/.test(host)) {
      return new GeneralName({ dNSName: host });
    }
    throw new InvalidArgumentError(`hosts[${i}] must be an IP address or a DNS name`, {
      details: { name: `hosts[${i}]` },
    });
  });
  let caCert: X509Certificate;
  let caKey: KeyObject;
  try {
    caCert = new X509Certificate(ca.certPem);
    caKey = createPrivateKey(ca.keyPem);
  } catch (cause) {
    throw new InvalidArgumentError('ca must hold a PEM certificate and its PEM private key', {
      cause,
      details: { name: 'ca' },
    });
  }
  if (!caCert.ca || !caCert.checkPrivateKey(caKey)) {
    throw new InvalidArgumentError("ca's key does not match its certificate, or it is not a CA", {
      details: { name: 'ca' },
    });
  }
  const caTbs = AsnConvert.parse(caCert.raw, Certificate).tbsCertificate;
  const spki = spkiOf(request.publicKey);
  const extensions = [
    extension(id_ce_basicConstraints, true, new BasicConstraints({ cA: false })),
    extension(id_ce_keyUsage, true, new KeyUsage(KeyUsageFlags.digitalSignature)),
    extension(
      id_ce_extKeyUsage,
      false,
      new ExtendedKeyUsage([request.usage === 'server' ? id_kp_serverAuth : id_kp_clientAuth]),
    ),
    extension(id_ce_subjectKeyIdentifier, false, new SubjectKeyIdentifier(keyIdentifier(spki))),
    extension(
      id_ce_authorityKeyIdentifier,
      false,
      new AuthorityKeyIdentifier({
        keyIdentifier: new KeyIdentifier(keyIdentifier(caTbs.subjectPublicKeyInfo)),
      }),
    ),
  ];
  if (names.length > 0)
    extensions.push(extension(id_ce_subjectAltName, false, new SubjectAlternativeName(names)));
  const tbs = new TBSCertificate({
    version: Version.v3,
    serialNumber: serialNumber(),
    signature: new AlgorithmIdentifier({ algorithm: ECDSA_WITH_SHA256 }),
    issuer: caTbs.subject,
    validity: validity(days),
    subject: commonName(request.commonName),
    subjectPublicKeyInfo: spki,
    extensions: new Extensions(extensions),
  });
  return signCertificate(tbs, caKey);
}
