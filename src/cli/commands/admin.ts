import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { ADMIN_SCOPES, type AdminScope, generateAdminToken } from '../../admin/index.ts';
import { CohortError, InvalidArgumentError } from '../../errors/index.ts';
import type { CliContext } from '../context/cli-context.ts';

interface TokenFlags {
  id: string;
  scopes: string;
  out?: string;
}

/** `--scopes admin,operator` as scopes, refusing unknown ones. */
function parseScopes(text: string): AdminScope[] {
  const scopes = text.split(',').map((s) => s.trim());
  for (const s of scopes) {
    if (!(ADMIN_SCOPES as readonly string[]).includes(s)) {
      throw new InvalidArgumentError(
        `--scopes: ${JSON.stringify(s)} is not one of ${ADMIN_SCOPES.join(', ')}`,
        {
          details: { name: 'scopes' },
        },
      );
    }
  }
  return scopes as AdminScope[];
}

/**
 * `cohort admin token --id <id> [--scopes operator] [--out <file>]`: a fresh random admin-API
 * token (256 bits, base64url) and the `admin.tokens` entry that configures it by SHA-256. The
 * token is printed (or, with `--out`, written owner-only to a new file and not printed); the
 * configuration only ever holds its hash.
 */
export function registerAdminCommand(program: Command, ctx: CliContext): void {
  const admin = program.command('admin').description("the coordinator's admin API (docs/admin-api.md)");
  admin
    .command('token')
    .description('make a fresh admin API token and its configuration entry (SHA-256)')
    .requiredOption('--id <id>', 'the token id (names the caller in logs and admin-action records)')
    .option('--scopes <list>', `comma-separated scopes (${ADMIN_SCOPES.join(', ')})`, 'auditor')
    .option('--out <file>', 'write the token to this new file (mode 0600) instead of printing it')
    .action((flags: TokenFlags) => {
      if (!/^[A-Za-z0-9_.-]{1,64}$/.test(flags.id)) {
        throw new InvalidArgumentError(
          `--id ${flags.id}: 1-64 characters of A-Z, a-z, 0-9, "_", "." and "-"`,
          {
            details: { name: 'id' },
          },
        );
      }
      const scopes = parseScopes(flags.scopes);
      const { token, sha256 } = generateAdminToken();
      if (flags.out !== undefined) {
        try {
          writeFileSync(flags.out, `${token}\n`, { flag: 'wx', mode: 0o600 });
        } catch (cause) {
          throw new CohortError(
            'OUTPUT_UNWRITABLE',
            `cannot create ${flags.out}: ${(cause as Error).message}`,
            {
              cause,
              details: { path: flags.out },
            },
          );
        }
        ctx.stdout.write(`token written to ${flags.out}\n`);
      } else {
        ctx.stdout.write(`token: ${token}\n`);
      }
      ctx.stdout.write(`sha256: ${sha256}\n`);
      ctx.stdout.write(
        `admin.tokens entry: { id: ${flags.id}, sha256: ${sha256}, scopes: [${scopes.join(', ')}] }\n`,
      );
    });
}
