// promtool (Debian's `prometheus` package) for the metrics tests: a live exposition through
// `promtool check metrics`, the shipped rules through `check rules` and `test rules`.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Where promtool is, or undefined when it is not installed (CI installs it). */
export const PROMTOOL: string | undefined = ['/usr/bin/promtool', '/usr/local/bin/promtool'].find((p) =>
  existsSync(p),
);

/** Why a promtool test is skipped, for the skip message. */
export const NO_PROMTOOL = 'promtool is not installed (apt-get install prometheus); CI installs it';

/** Runs promtool with `args` (and `input` on stdin); its exit status and output. */
export function promtool(
  args: readonly string[],
  input?: string,
  cwd?: string,
): { code: number; output: string } {
  if (PROMTOOL === undefined) throw new Error(NO_PROMTOOL);
  const r = spawnSync(PROMTOOL, args, { input, cwd, encoding: 'utf8', timeout: 30_000 });
  if (r.error) throw r.error;
  return { code: r.status ?? -1, output: `${r.stdout}${r.stderr}` };
}

/** One sample of an exposition: name and labels as written, and the value. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** The samples of a Prometheus text exposition (no escapes in Cohort's label values). */
export function parseExposition(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** The value of the one sample of `name` whose labels include `labels`; throws if none or several. */
export function sample(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string> = {},
): number {
  const found = samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (found.length !== 1) throw new Error(`${found.length} samples of ${name}${JSON.stringify(labels)}`);
  return found[0]!.value;
}

/** Metric families declared in an exposition (`# TYPE` lines): name → type. */
export function families(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) out.set(m[1]!, m[2]!);
  return out;
}
