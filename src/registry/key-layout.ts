import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Name of the shared folder of public files and envelopes inside a keys folder. */
export const PUBLIC_KEY_DIR = 'public';

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The folder holding `id`'s own key files (docs/key-ceremony.md): `<keysDir>/<id>/` when it exists
 * (the ceremony's layout: one 0700 folder per member), else `keysDir` itself (a member's own host,
 * or an older flat folder).
 */
export function memberKeyDir(keysDir: string, id: string): string {
  const own = join(keysDir, id);
  return isDir(own) ? own : keysDir;
}

/** `id`'s signing key pair file: `<id>.key` in {@link memberKeyDir}. */
export function memberSigningKeyFile(keysDir: string, id: string): string {
  return join(memberKeyDir(keysDir, id), `${id}.key`);
}

/**
 * The shared folder of public files and envelopes: `<keysDir>/public/` when it exists, else
 * `keysDir` itself (an older flat folder).
 */
export function publicKeyDir(keysDir: string): string {
  const shared = join(keysDir, PUBLIC_KEY_DIR);
  return isDir(shared) ? shared : keysDir;
}

/**
 * Where a public file of `id` (`<id><suffix>`, e.g. `.pub`, `.kem.pub`, `.nk.pub`, `.ckks.env`) or a
 * federation file (`id` empty: `ca.crt`, `registry.bin`) is found: the shared public folder, then
 * the member's own folder, then `keysDir`. The first existing path; the shared folder's path when
 * none exists (so errors name where it was expected).
 */
export function publicFile(keysDir: string, name: string, owner?: string): string {
  const candidates = [join(publicKeyDir(keysDir), name)];
  if (owner !== undefined) candidates.push(join(memberKeyDir(keysDir, owner), name));
  candidates.push(join(keysDir, name));
  return candidates.find((p) => existsSync(p)) ?? candidates[0]!;
}
