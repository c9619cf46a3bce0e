// `npm run docs:reference`: writes the reference pages that code is the source of, so they never
// drift: docs/reference/cli.md (every command's help, from commander), docs/reference/errors.md
// (every stable error code with its meaning, from the catalogues' TSDoc) and
// docs/reference/metrics.md (every series of every member's registry) and
// docs/reference/configuration.md (every field, from the schema). `-- --check` only
// compares (exit 1 when a page differs); test/architecture checks it too.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { Counter, Gauge, Histogram, type Registry, Summary } from 'prom-client';
import { z } from 'zod';
import { markdownTable } from '../bench/markdown-table.ts';
import { createProgram } from '../src/cli/index.ts';
import { bootstrapConfigSchema } from '../src/config/schema.ts';
import {
  addProcessMetrics,
  adminApiMetrics,
  createAggregatorMetrics,
  createCoordinatorMetrics,
  createSiteMetrics,
} from '../src/metrics/index.ts';

const ROOT = resolve(import.meta.dirname, '..');
const HELP_WIDTH = 100;

/** Every command of `program`, depth first, with its full name (`cohort keys signing generate`). */
function commandsOf(command: Command, prefix: string): { name: string; command: Command }[] {
  const name = prefix === '' ? command.name() : `${prefix} ${command.name()}`;
  return [{ name, command }, ...command.commands.flatMap((c) => commandsOf(c, name))];
}

/** docs/reference/cli.md: the help of `cohort` and of every command under it. */
export async function renderCliReference(): Promise<string> {
  const quiet = { stdout: { write: () => true }, stderr: { write: () => true }, env: {} };
  const program = await createProgram(quiet);
  const out = [
    '# Command-line reference',
    '',
    'Generated from the commands themselves by `npm run docs:reference` (checked by',
    '`test/architecture/reference-docs.test.ts`): every command and subcommand of `cohort`, with',
    'its options and defaults, exactly as `cohort … --help` prints them.',
    '',
  ];
  for (const { name, command } of commandsOf(program, '')) {
    if (name.endsWith(' help')) continue;
    command.configureHelp({ helpWidth: HELP_WIDTH });
    out.push(`## \`${name}\``, '', '```', command.helpInformation().trimEnd(), '```', '');
  }
  return `${out.join('\n').trimEnd()}\n`;
}

/** Every `.ts` file under `dir`, repository-relative. */
function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir))
    .sort()
    .flatMap((n) => {
      const path = `${dir}/${n}`;
      return statSync(join(ROOT, path)).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
    });
}

/** The codes of each `export const …_CODES` (or `_REASONS`) `= [ /** meaning *\/ 'CODE', … ]` catalogue in `text`. */
export function catalogues(text: string): { name: string; codes: { code: string; meaning: string }[] }[] {
  const out: { name: string; codes: { code: string; meaning: string }[] }[] = [];
  for (const m of text.matchAll(
    /export const ([A-Z_]+_(?:CODES|REASONS))(?:: [^=]+)? = (?:Object\.freeze\()?\[([\s\S]*?)\]/g,
  )) {
    const codes: { code: string; meaning: string }[] = [];
    let meaning = '';
    for (const line of m[2]!.split('\n')) {
      const t = line.trim();
      const doc = /^\/\*\*\s*(.*?)\s*\*\/$/.exec(t);
      if (doc) {
        meaning = doc[1]!;
        continue;
      }
      if (t.startsWith('/**')) meaning = t.replace(/^\/\*\*\s*/, '');
      else if (t.startsWith('*/')) continue;
      else if (t.startsWith('*'))
        meaning = `${meaning} ${t.replace(/^\*\s*/, '').replace(/\s*\*\/$/, '')}`.trim();
      for (const c of t.matchAll(/'([A-Z][A-Z0-9_]*)'/g)) {
        codes.push({ code: c[1]!, meaning });
        meaning = '';
      }
    }
    if (codes.length > 0) out.push({ name: m[1]!, codes });
  }
  return out;
}

/** docs/reference/errors.md: every stable code of every catalogue under src, by file. */
export function renderErrorReference(): string {
  const out = [
    '# Error codes',
    '',
    'Generated from the catalogues in the code by `npm run docs:reference` (checked by',
    '`test/architecture/reference-docs.test.ts`). Every `CohortError` carries one of these codes',
    '(`error [CODE]: message` on the command line, `code` in a log line); codes are never renamed',
    'once released. Refusals counted by reason, audit problems and unchecked items have their own',
    'catalogues, listed here too.',
    '',
  ];
  for (const file of sources('src')) {
    const found = catalogues(readFileSync(join(ROOT, file), 'utf8'));
    for (const c of found) {
      const rows = c.codes.map(({ code, meaning }) => [`\`${code}\``, meaning === '' ? '—' : meaning]);
      out.push(`## \`${c.name}\` (${file})`, '', ...markdownTable(['code', 'meaning'], rows), '');
    }
  }
  return `${out.join('\n').trimEnd()}\n`;
}

/** The type of a prom-client metric. */
function kindOf(m: unknown): string {
  if (m instanceof Counter) return 'counter';
  if (m instanceof Gauge) return 'gauge';
  if (m instanceof Histogram) return 'histogram';
  if (m instanceof Summary) return 'summary';
  return 'untyped';
}

/** The Cohort series of `registry`: name, type, labels and help, by name. */
function seriesOf(registry: Registry): string[][] {
  return registry
    .getMetricsAsArray()
    .filter((m) => m.name.startsWith('cohort_'))
    .map((m) => {
      const labels = ((m as unknown as { labelNames?: string[] }).labelNames ?? []).join(', ');
      return [
        `\`${m.name}\``,
        kindOf(m),
        labels === '' ? '—' : labels,
        (m as unknown as { help: string }).help,
      ];
    })
    .sort((a, b) => (a[0]! < b[0]! ? -1 : 1));
}

/**
 * docs/reference/metrics.md: every series each member's registry holds, as the registry itself
 * declares it (docs/metrics.md says how to read them and what the alerts do).
 */
export function renderMetricsReference(): string {
  const unread = (): never => {
    throw new Error('not scraped');
  };
  const coordinator = createCoordinatorMetrics({ stats: unread, transportStats: unread });
  adminApiMetrics(coordinator.registry);
  addProcessMetrics(coordinator.registry, '0.0.0');
  const aggregator = createAggregatorMetrics({ stats: unread, transportStats: unread });
  addProcessMetrics(aggregator.registry, '0.0.0');
  const site = createSiteMetrics({ stats: unread, transportStats: unread });
  addProcessMetrics(site.registry, '0.0.0');
  const head = ['name', 'type', 'labels', 'help'];
  const out = [
    '# Metrics reference',
    '',
    'Generated from the registries themselves by `npm run docs:reference` (checked by',
    '`test/architecture/reference-docs.test.ts`): every Cohort series each member serves at',
    '`GET /metrics`, with its type, labels and help text. Each exposition also carries',
    "prom-client's default `process_*` and `nodejs_*` series. [metrics.md](../metrics.md) says",
    'what they measure, how they are built and which alerts read them.',
    '',
  ];
  for (const [title, registry] of [
    ['Coordinator (admin API)', coordinator.registry],
    ['Aggregator (`--metrics-port`)', aggregator.registry],
    ['Site agent (`--metrics-port`)', site.registry],
  ] as const) {
    out.push(`## ${title}`, '', ...markdownTable(head, seriesOf(registry)), '');
  }
  return `${out.join('\n').trimEnd()}\n`;
}

/** A JSON Schema node, as zod writes it. */
interface SchemaNode {
  readonly type?: string | string[];
  readonly properties?: Record<string, SchemaNode>;
  readonly items?: SchemaNode;
  readonly enum?: unknown[];
  readonly const?: unknown;
  readonly anyOf?: SchemaNode[];
  readonly oneOf?: SchemaNode[];
  readonly default?: unknown;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly exclusiveMinimum?: number;
  readonly exclusiveMaximum?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly pattern?: string;
  readonly required?: string[];
}

/** `node`'s type in words: its enum values, its alternatives, or its JSON type. */
function typeOf(node: SchemaNode): string {
  if (node.enum !== undefined) return node.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (node.const !== undefined) return JSON.stringify(node.const);
  const alternatives = node.anyOf ?? node.oneOf;
  if (alternatives !== undefined) {
    const kinds = [...new Set(alternatives.map(typeOf))];
    return kinds.length === 1 && alternatives.length > 1
      ? `${kinds[0]} (one of ${alternatives.length} forms)`
      : kinds.join(' or ');
  }
  if (node.type === 'array') return `array of ${node.items === undefined ? 'any' : typeOf(node.items)}`;
  return Array.isArray(node.type) ? node.type.join(' or ') : (node.type ?? 'any');
}

/** `node`'s bounds in words (integers beyond 2^53 − 1 are left out: no bound). */
function boundsOf(node: SchemaNode): string {
  const b: string[] = [];
  const big = (n: number) => Math.abs(n) >= Number.MAX_SAFE_INTEGER;
  if (node.minimum !== undefined && !big(node.minimum)) b.push(`≥ ${node.minimum}`);
  if (node.exclusiveMinimum !== undefined) b.push(`> ${node.exclusiveMinimum}`);
  if (node.maximum !== undefined && !big(node.maximum)) b.push(`≤ ${node.maximum}`);
  if (node.exclusiveMaximum !== undefined) b.push(`< ${node.exclusiveMaximum}`);
  if (node.minLength !== undefined) b.push(`length ≥ ${node.minLength}`);
  if (node.maxLength !== undefined) b.push(`length ≤ ${node.maxLength}`);
  if (node.minItems !== undefined) b.push(`items ≥ ${node.minItems}`);
  if (node.maxItems !== undefined) b.push(`items ≤ ${node.maxItems}`);
  if (node.pattern !== undefined) b.push(`matches \`${node.pattern}\``);
  return b.join(', ');
}

/** One row per leaf field of `node` under `path`: objects open, arrays of objects as `path[]`. */
function fieldRows(node: SchemaNode, path: string, required: boolean): string[][] {
  const items = node.type === 'array' ? node.items : undefined;
  if (node.properties !== undefined) {
    const need = new Set(node.required ?? []);
    return Object.entries(node.properties).flatMap(([k, v]) =>
      fieldRows(v, path === '' ? k : `${path}.${k}`, need.has(k) && v.default === undefined),
    );
  }
  if (items?.properties !== undefined) return fieldRows(items, `${path}[]`, required);
  const fallback =
    node.default === undefined ? (required ? 'required' : '—') : `\`${JSON.stringify(node.default)}\``;
  return [[`\`${path}\``, typeOf(node), fallback, boundsOf(node) || '—']];
}

/**
 * docs/reference/configuration.md: every field of the federation configuration with its type,
 * default and bounds, from the schema the configuration is validated against.
 */
export function renderConfigReference(): string {
  const schema = z.toJSONSchema(bootstrapConfigSchema, { io: 'input', unrepresentable: 'any' }) as SchemaNode;
  return `${[
    '# Configuration reference',
    '',
    'Generated from the schema every configuration is validated against (`src/config/schema.ts`)',
    'by `npm run docs:reference` (checked by `test/architecture/reference-docs.test.ts`): every',
    'field of a federation configuration, with its type, default and bounds. A field that is',
    'neither required nor defaulted may be left out. What each field means, with an example, is',
    'in [config/federation.example.yaml](../../config/federation.example.yaml); rules across',
    'fields (for instance `round.minContributors` against the sites) are checked at start too.',
    '',
    ...markdownTable(['field', 'type', 'default', 'bounds'], fieldRows(schema, '', false)),
  ].join('\n')}\n`;
}

/** The pages and their text. */
export async function referencePages(): Promise<Record<string, string>> {
  return {
    'docs/reference/cli.md': await renderCliReference(),
    'docs/reference/errors.md': renderErrorReference(),
    'docs/reference/metrics.md': renderMetricsReference(),
    'docs/reference/configuration.md': renderConfigReference(),
  };
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const check = process.argv.includes('--check');
  let differ = 0;
  for (const [path, text] of Object.entries(await referencePages())) {
    const file = join(ROOT, path);
    let before = '';
    try {
      before = readFileSync(file, 'utf8');
    } catch {
      // written below
    }
    if (before === text) continue;
    differ++;
    if (check) console.error(`${relative(ROOT, file)} differs from the code; run npm run docs:reference`);
    else writeFileSync(file, text);
  }
  if (check && differ > 0) process.exit(1);
  console.log(
    `${check ? 'checked' : 'wrote'} docs/reference (${differ} page(s) ${check ? 'differ' : 'changed'})`,
  );
}
