import type { Command } from 'commander';
import { readKeyFile } from '../../../crypto/signature/key-file-io.ts';
import { CohortError, InvalidArgumentError } from '../../errors/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { loadConfigWithFlags } from '../context/config-options.ts';
import { printable } from './versions-format.ts';

interface StatusFlags {
  url?: string;
  config?: string;
  tokenFile?: string;
  json?: boolean;
  timeout: string;
}

/** Environment variable holding the admin token when `--token-file` is not given. */
export const ADMIN_TOKEN_ENV = 'COHORT_ADMIN_TOKEN';

/** `GET /v1/status` as the admin API answers it (docs/admin-api.md). */
export interface StatusJson {
  federation: string;
  phase: string;
  round: number;
  head: string;
  height: number;
  logSequence: number;
  sites: { configured: number; live: string[]; excluded: string[]; revoked: string[] };
  aggregators: { configured: number; live: string[] };
  committed: number;
  aborted: number;
  rejected: number;
  snapshots: number;
  run: {
    id: string;
    label: string;
    rounds: number | null;
    state: string;
    startedBy: string;
    decided: number;
    committed: number;
    aborted: number;
  } | null;
  /** Absent from coordinators older than differential privacy. */
  privacy?: { epsilon: number; budget: number } | null;
  /** Absent from coordinators older than `plain` mode. */
  aggregation?: { mode: string; rule: string | null } | null;
  lastRounds: {
    round: number;
    kind: string;
    status: 'open' | 'commit' | 'abort';
    reason: string;
    height: number;
    commitHash: string | null;
    participants: string[];
    contributors: string[];
  }[];
}

const list = (xs: readonly string[]) => (xs.length === 0 ? '-' : xs.map(printable).join(', '));

/** The lines `cohort status` prints for `s`. */
export function statusLines(s: StatusJson): string[] {
  const lines = [
    `federation ${printable(s.federation)}: ${s.phase}, round ${s.round}`,
    `head ${s.head.slice(0, 12)} (height ${s.height}), log entry ${s.logSequence}`,
    `sites: ${s.sites.live.length}/${s.sites.configured} live (${list(s.sites.live)}); excluded: ${list(s.sites.excluded)}; revoked: ${list(s.sites.revoked)}`,
    `aggregators: ${s.aggregators.live.length}/${s.aggregators.configured} live (${list(s.aggregators.live)})`,
    s.run === null
      ? 'run: none'
      : `run: ${s.run.id}${s.run.label === '' ? '' : ` "${printable(s.run.label)}"`} ${s.run.state}, ${s.run.decided}${s.run.rounds === null ? '' : `/${s.run.rounds}`} rounds (${s.run.committed} committed, ${s.run.aborted} aborted), started by ${printable(s.run.startedBy)}`,
    `this coordinator: ${s.committed} committed, ${s.aborted} aborted, ${s.snapshots} snapshots stored, ${s.rejected} messages refused`,
  ];
  if (s.privacy != null)
    lines.push(`privacy: ε ${s.privacy.epsilon.toFixed(4)} spent of ${s.privacy.budget}`);
  if (s.aggregation?.mode === 'plain') {
    lines.push(
      `aggregation: plain mode, ${s.aggregation.rule === null ? 'FedAvg of the sum' : printable(s.aggregation.rule)}`,
    );
  }
  if (s.lastRounds.length > 0) lines.push('last rounds:');
  for (const r of s.lastRounds) {
    const what =
      r.status === 'open'
        ? `open    ${r.participants.length} participants`
        : r.status === 'commit'
          ? `COMMIT  @${r.height} ${r.commitHash?.slice(0, 12)}  ${r.kind === 'round' ? `${r.contributors.length}/${r.participants.length} contributors` : r.kind}`
          : `ABORT   ${printable(r.reason) || '(no reason)'}`;
    lines.push(`  round ${r.round}  ${what}`);
  }
  return lines;
}

/** The API's base URL: `--url`, else the `admin` section of `--config`. */
function baseUrl(flags: StatusFlags, ctx: CliContext): string {
  if (flags.url !== undefined) {
    if (!/^https?:\/\/[^\s/]+\/?$/.test(flags.url)) {
      throw new InvalidArgumentError(`--url ${flags.url} must be http(s)://host:port`, {
        details: { name: 'url' },
      });
    }
    return flags.url.replace(/\/$/, '');
  }
  if (flags.config === undefined) {
    throw new InvalidArgumentError('--url <url> or --config <file> (with an admin section) is required', {
      details: { name: 'url' },
    });
  }
  const admin = loadConfigWithFlags(flags.config, {}, ctx).admin;
  if (admin === undefined) {
    throw new InvalidArgumentError(`${flags.config} has no admin section; pass --url`, {
      details: { name: 'url' },
    });
  }
  const host =
    admin.host === '0.0.0.0'
      ? '127.0.0.1'
      : admin.host === '::'
        ? '[::1]'
        : admin.host.includes(':')
          ? `[${admin.host}]`
          : admin.host;
  return `${admin.tls === undefined ? 'http' : 'https'}://${host}:${admin.port}`;
}

/** The token from `--token-file` (owner-only) or the environment; never from argv. */
function readToken(flags: StatusFlags, ctx: CliContext): string {
  const text =
    flags.tokenFile !== undefined
      ? new TextDecoder().decode(readKeyFile(flags.tokenFile, true))
      : ctx.env[ADMIN_TOKEN_ENV];
  const token = text?.trim();
  if (token === undefined || token.length === 0) {
    throw new InvalidArgumentError(`an admin token is needed: --token-file <file> or ${ADMIN_TOKEN_ENV}`, {
      details: { name: 'token-file' },
    });
  }
  return token;
}

/** GETs `path` of the admin API; an error answer becomes a CohortError with its code. */
export async function adminGet(
  url: string,
  path: string,
  token: string,
  timeoutMs: number,
): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(`${url}${path}`, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (cause) {
    throw new CohortError(
      'ADMIN_UNREACHABLE',
      `cannot reach the admin API at ${url}: ${(cause as Error).message}`,
      {
        cause,
        details: { url },
      },
    );
  }
  const body = (await res.json().catch(() => null)) as { code?: unknown; message?: unknown } | null;
  if (!res.ok) {
    const code = typeof body?.code === 'string' ? body.code : `HTTP_${res.status}`;
    const message = typeof body?.message === 'string' ? body.message : res.statusText;
    throw new CohortError(code, `admin API ${path}: ${message}`, { details: { status: res.status } });
  }
  return body;
}

/**
 * `cohort status [--url <url> | --config <file>] [--token-file <file>] [--json]`: the federation at
 * a glance from the coordinator's admin API (`GET /v1/status`, auditor scope): phase and round,
 * head and height, sites live / excluded / revoked, aggregators, the active run, the last rounds.
 * The token comes from `--token-file` (owner-only) or `COHORT_ADMIN_TOKEN`, never from argv.
 * `--json` prints the API's JSON as is. Exit 0; 2 when it cannot ask (unreachable, refused: the
 * API's error code and message on stderr).
 */
export function registerStatusCommand(program: Command, ctx: CliContext): void {
  program
    .command('status')
    .description("print the federation at a glance from the coordinator's admin API")
    .option('--url <url>', 'the admin API (http(s)://host:port)')
    .option('-c, --config <file>', 'federation YAML: the API address from its admin section')
    .option('--token-file <file>', `file holding the admin token (default: $${ADMIN_TOKEN_ENV})`)
    .option('--json', 'print the API answer (JSON)')
    .option('--timeout <ms>', 'give up after this long', '10000')
    .action(async (flags: StatusFlags) => {
      const timeout = Number(flags.timeout);
      if (!Number.isSafeInteger(timeout) || timeout < 1) {
        throw new InvalidArgumentError(`--timeout ${flags.timeout} must be a positive integer (ms)`, {
          details: { name: 'timeout' },
        });
      }
      const url = baseUrl(flags, ctx);
      const status = (await adminGet(url, '/v1/status', readToken(flags, ctx), timeout)) as StatusJson;
      if (flags.json === true) ctx.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
      else
        ctx.stdout.write(
          statusLines(status)
            .map((l) => `${l}\n`)
            .join(''),
        );
    });
}
