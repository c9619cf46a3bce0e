import { ConfigError } from '../errors/index.ts';
import type { RegistryView } from '../registry/index.ts';
import { federationGenesis } from '../round/index.ts';
import { LOG_ORIGIN } from './federation-log/log-entry.ts';
import { LogHistory } from './federation-log/log-history.ts';
import { openLogReader } from './federation-log/log-reader.ts';
import type { MemberContext } from './member-context.ts';

/**
 * The member registry as the federation log has it now: `member`'s pinned registry with every
 * logged enrollment, rotation and revocation folded in by the log's own rules (`LogHistory`: the
 * coordinator's signature on each entry, the officer's on each change, the registry's rules), read
 * over `member`'s NATS connection. `member` must be one whose NATS user may read the log (the
 * coordinator, a site, an auditor). An absent or empty log gives the pinned registry alone.
 *
 * @throws ConfigError naming `members.registry` when `member` has no pinned registry;
 *   FederationLogError `LOG_UNAVAILABLE`, `LOG_ENTRY_INVALID`, `LOG_CHAIN_BROKEN` or
 *   `LOG_HISTORY_INVALID` for a log that cannot be read or does not verify.
 */
export async function readLoggedRegistry(member: MemberContext): Promise<RegistryView> {
  const signed = member.signedRegistry;
  if (signed === undefined) {
    throw new ConfigError(
      'CONFIG_INVALID',
      'members.registry: the registry changes are read on a pinned registry',
      {
        details: { path: 'members.registry' },
      },
    );
  }
  const config = member.config;
  let history: LogHistory | undefined;
  const reader = await openLogReader(member.transport.connection, {
    federation: config.federation.id,
    coordinator: member.members.coordinator,
    keys: (id) => history?.registry?.current(id),
  });
  history = new LogHistory(federationGenesis(config).commit, reader.stream, {
    registry: signed,
    keepEvidence: false,
    retainRounds: 1,
  });
  for await (const entry of reader.entries(LOG_ORIGIN)) history.apply(entry);
  return history.registry!;
}
