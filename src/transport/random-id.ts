import { randomBytes } from 'node:crypto';

/**
 * A fresh 128-bit crypto-random id, 22 characters of base64url (`[A-Za-z0-9_-]`): message ids,
 * request reply tokens and reply-inbox bases, none of which another member can predict.
 */
export function randomId(): string {
  return randomBytes(16).toString('base64url');
}
