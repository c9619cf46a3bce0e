import { isIP } from 'node:net';

/**
 * Whether `host` is a loopback address: `localhost`, an IPv4 address in 127.0.0.0/8, `::1`, or
 * `::ffff:127.x.y.z`. Anything else, a DNS name or a wildcard (`0.0.0.0`, `::`) included, may be
 * reached from the network.
 */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) {
    if (h === '::1' || /^0{0,4}(:0{0,4}){6}:0{0,3}1$/.test(h)) return true;
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h);
    return mapped !== null && mapped[1]!.startsWith('127.');
  }
  return false;
}

/** The fields of the `admin` section the clear-text rule reads. */
export interface AdminListenSettings {
  readonly host: string;
  readonly tls?: unknown;
  readonly insecurePlaintextOnNetwork?: boolean;
}

/**
 * Why the admin API may not listen as `admin` says, or null: plain HTTP (no `admin.tls`) on a
 * non-loopback `admin.host` would send every bearer token and answer in clear, so it needs
 * `admin.tls` or the explicit `admin.insecurePlaintextOnNetwork: true`.
 */
export function plaintextAdminProblem(admin: AdminListenSettings): string | null {
  if (typeof admin?.host !== 'string') return null;
  if (admin.tls !== undefined || admin.insecurePlaintextOnNetwork === true || isLoopbackHost(admin.host)) {
    return null;
  }
  return `required when admin.host (${admin.host}) is not a loopback address: bearer tokens would cross the network in clear (give admin.tls, listen on 127.0.0.1, or set admin.insecurePlaintextOnNetwork: true behind a TLS proxy)`;
}
