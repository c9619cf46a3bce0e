import { randomBytes } from 'node:crypto';
import { hashToken } from './token-auth.ts';

/** Random bytes in a fresh token (256 bits). */
export const TOKEN_BYTES = 32;

/** A fresh token and what the configuration holds of it. */
export interface NewAdminToken {
  /** The token (base64url, 43 characters): give it to its holder, never to the configuration. */
  readonly token: string;
  /** Its SHA-256, hex: `admin.tokens[].sha256`. */
  readonly sha256: string;
}

/** A fresh random token and its SHA-256. */
export function generateAdminToken(): NewAdminToken {
  const token = randomBytes(TOKEN_BYTES).toString('base64url');
  return { token, sha256: hashToken(token) };
}
