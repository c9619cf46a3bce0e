import type { Command } from 'commander';
import { loadKemPublicKey } from '../../../crypto/kem/index.ts';
import { loadPublicKey, loadSigningKeyPair, wipeSigningKeyPair } from '../../../crypto/signature/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import {
  encodeRegistryChangeRecord,
  type RegistryChangeBody,
  type RegistryChangeKind,
  readNkeyFile,
  sealRegistryChange,
} from '../../registry/index.ts';
import { roleOf } from '../../services/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { addConfigOptions, type ConfigFlags } from '../context/config-options.ts';
import { finding, withVersionsSession } from './versions-session.ts';

interface RegistryChangeFlags extends ConfigFlags {
  config: string;
  officerKey: string;
  member: string;
  fromRound?: string;
  signingPub?: string;
  kemPub?: string;
  nkeyPub?: string;
  reason?: string;
  as?: string;
  wait?: boolean;
}

/** Poll interval of `--wait`, ms. */
const WAIT_POLL_MS = 500;

/**
 * `cohort registry enroll|rotate|revoke --config <federation.yaml> --officer-key <officer.key>
 * --member <id> [--from-round <n>] [--signing-pub <id>.pub] [--kem-pub <id>.kem.pub]
 * [--nkey-pub <id>.nk.pub] [--reason <text>] [--as <id>] [--wait]`: the registry officer's change,
 * signed with the officer's key (domain `registry-change`) and sent as a request on
 * `cohort.<F>.admin.registry` with the NATS identity of `--as` (default the coordinator: run it on
 * the coordinator's host). The coordinator checks it and queues it; it is logged right before round
 * `--from-round` opens (default: the round after the next, as the next may open before the request
 * arrives; a round the coordinator already started is refused), and applies from that round on:
 * - `enroll`: a member of the configuration (its NATS user in nats.conf) not in the registry;
 *   `--signing-pub` and, for a site, `--kem-pub` required, `--nkey-pub` optional;
 * - `rotate`: new keys from the round on (`--signing-pub` required; `--kem-pub` optional): the
 *   member's old key is refused from then on, so it restarts with its new key file then;
 * - `revoke`: refused from the round on, and never assigned again.
 * Prints the coordinator's JSON reply; with `--wait`, then waits for the log entry and prints
 * `logged <kind> <member> from round <r> (entry <s>)`. Exit 2 when refused, 3 when not logged in time.
 */
export function registerRegistryChangeCommands(registry: Command, ctx: CliContext): void {
  const kinds: [RegistryChangeKind, string][] = [
    ['enroll', 'officer: enroll a configured member with its public keys from a round on'],
    ['rotate', "officer: replace a member's keys from a round on"],
    ['revoke', 'officer: refuse a member from a round on'],
  ];
  for (const [kind, description] of kinds) {
    const command = registry
      .command(kind)
      .description(description)
      .requiredOption('-c, --config <file>', 'federation YAML')
      .requiredOption('--officer-key <file>', "the registry officer's signing key pair (.key, 0600)")
      .requiredOption('-m, --member <id>', `the member to ${kind}`)
      .option('--from-round <n>', 'first round the change applies to (default: the round after the next)')
      .option('--reason <text>', 'why (recorded in the log)', '')
      .option('--as <id>', 'member whose keys and NATS user send the request (default: members.coordinator)')
      .option('--wait', 'wait until the coordinator logged the change');
    if (kind !== 'revoke') {
      command
        .option('--signing-pub <file>', "the member's new public signing key (<id>.pub)")
        .option('--kem-pub <file>', "a site's new ML-KEM-768 public key (<id>.kem.pub)");
    }
    if (kind === 'enroll') command.option('--nkey-pub <file>', "the member's public NKEY (<id>.nk.pub)");
    addConfigOptions(command).action(async (flags: RegistryChangeFlags) => {
      await runChange(kind, flags, ctx);
    });
  }
}

async function runChange(
  kind: RegistryChangeKind,
  flags: RegistryChangeFlags,
  ctx: CliContext,
): Promise<void> {
  await withVersionsSession(
    {
      config: flags.config,
      ...(flags.as === undefined ? {} : { member: flags.as }),
      ...pickConfigFlags(flags),
    },
    ctx,
    async ({ config, member, timeline, sync }) => {
      const role = roleOf(config, flags.member);
      const history = timeline.history;
      // Read what was logged while the session opened (a verified read of a long log takes a
      // while, and fast rounds go on meanwhile), so the round named below is still ahead.
      await sync();
      const next = (history.openRound?.roundOpen.round ?? history.lastRound) + 1;
      // By default the round after the next: the next one may open before the request arrives.
      const fromRound = flags.fromRound === undefined ? next + 1 : Number(flags.fromRound);
      if (!Number.isSafeInteger(fromRound) || fromRound < next) {
        throw new InvalidArgumentError(
          `--from-round ${flags.fromRound} must be a round ≥ ${next} (the next round)`,
          { details: { name: 'from-round' } },
        );
      }
      if (kind !== 'revoke' && flags.signingPub === undefined) {
        throw new InvalidArgumentError(`${kind} needs --signing-pub`, { details: { name: 'signing-pub' } });
      }
      if (kind === 'enroll' && role === 'site' && flags.kemPub === undefined) {
        throw new InvalidArgumentError('enrolling a site needs --kem-pub', { details: { name: 'kem-pub' } });
      }
      const change: RegistryChangeBody = {
        federation: config.federation.id,
        kind,
        member: flags.member,
        role,
        signingKey: flags.signingPub === undefined ? undefined : loadPublicKey(flags.signingPub),
        kemKey: flags.kemPub === undefined ? undefined : loadKemPublicKey(flags.kemPub),
        nkey: flags.nkeyPub === undefined ? undefined : readNkeyFile(flags.nkeyPub),
        fromRound,
        issuedUnixMs: Date.now(),
        reason: flags.reason ?? '',
      };
      const officer = loadSigningKeyPair(flags.officerKey);
      let request: Uint8Array;
      try {
        request = encodeRegistryChangeRecord(sealRegistryChange(change, officer));
      } finally {
        wipeSigningKeyPair(officer);
      }
      const after = timeline.position.sequence;
      const reply = new TextDecoder().decode(
        await member.transport.request(member.subjects.registryRequest, request),
      );
      ctx.stdout.write(`${reply}\n`);
      if (flags.wait !== true) return;
      const perRound = config.round.deadlineMs + config.round.voteTimeoutMs;
      const deadline = Date.now() + (fromRound - next + 1) * perRound + 30_000;
      for (;;) {
        await sync();
        const logged = history.registryChanges.find(
          (c) =>
            c.entry.sequence > after &&
            c.change.kind === kind &&
            c.change.member === flags.member &&
            c.change.fromRound === fromRound,
        );
        if (logged !== undefined) {
          ctx.stdout.write(
            `logged ${kind} ${flags.member} from round ${fromRound} (entry ${logged.entry.sequence})\n`,
          );
          return;
        }
        if (Date.now() > deadline) {
          const message = `the ${kind} of ${flags.member} was not logged in time`;
          ctx.stderr.write(`error: ${message}\n`);
          throw finding(message);
        }
        await new Promise((r) => setTimeout(r, WAIT_POLL_MS));
      }
    },
    (config) => config.members?.coordinator ?? 'coordinator',
  );
}

function pickConfigFlags(flags: ConfigFlags): ConfigFlags {
  return {
    ...(flags.set === undefined ? {} : { set: flags.set }),
    ...(flags.env === undefined ? {} : { env: flags.env }),
  };
}
