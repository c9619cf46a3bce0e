// An NKEY user for a test's own nats-server: the server's NatsUser (public key and permissions)
// and the client's authenticator (seed), so tests authenticate as the services do (no password).
import { createUser } from '@nats-io/nkeys';
import { type Authenticator, nkeyAuthenticator } from '@nats-io/transport-node';
import type { NatsPermissionSet, NatsResponsePermission, NatsUser } from '../../src/transport/index.ts';

/** A user of a test server and how to connect as it. */
export interface TestNkeyUser {
  readonly user: NatsUser;
  /** Pass as `authenticator` to `connect()`. */
  readonly authenticator: Authenticator;
  /** The seed (`SU…`), e.g. to write a seed file. */
  readonly seed: Uint8Array;
}

/** A fresh NKEY user named `name` with these permissions. */
export function nkeyUser(
  name: string,
  publish: NatsPermissionSet,
  subscribe: NatsPermissionSet,
  allowResponses?: NatsResponsePermission,
): TestNkeyUser {
  const kp = createUser();
  const seed = kp.getSeed();
  return {
    user: {
      user: name,
      nkey: kp.getPublicKey(),
      publish,
      subscribe,
      ...(allowResponses ? { allowResponses } : {}),
    },
    authenticator: nkeyAuthenticator(seed),
    seed,
  };
}
