// Entry point of `npm run bench -- <name>`: runs one benchmark (or all), printing a table and
// writing bench/results/<name>.json.
const BENCHES: Record<string, () => Promise<unknown>> = {
  codec: () => import('./codec.ts').then((m) => m.runCodecBench()),
  train: () => import('./train.ts').then((m) => m.runTrainBench()),
  round: () => import('./round.ts').then((m) => m.runRoundBench()),
  history: () => import('./history.ts').then((m) => m.runHistoryBench()),
  hostile: () => import('./hostile.ts').then((m) => m.runHostileBench()),
  audit: () => import('./audit.ts').then((m) => m.runAuditBench()),
  soak: () => import('./soak.ts').then((m) => m.runSoakBench()),
  privacy: () => import('./privacy.ts').then((m) => m.runPrivacyBench()),
  plain: () => import('./plain.ts').then((m) => m.runPlainBench()),
  threshold: () => import('./threshold.ts').then((m) => m.runThresholdBench()),
};

// A bare word right after a `--flag` is that flag's value (`audit --rounds 3`), not a bench name.
const names = process.argv
  .slice(2)
  .filter((a, i, all) => !a.startsWith('-') && !all[i - 1]?.startsWith('--'));
if (names.length === 0 || names.some((n) => n !== 'all' && !(n in BENCHES))) {
  console.error(`usage: npm run bench -- <${[...Object.keys(BENCHES), 'all'].join('|')}>`);
  process.exit(2);
}
for (const name of names.includes('all') ? Object.keys(BENCHES) : names) {
  try {
    await BENCHES[name]!();
  } catch (err) {
    // A bench that cannot finish says why in one line (code and message, with its causes), writes
    // no result file, and exits 1: never an uncaught exception with a stack as the only report.
    const parts: string[] = [];
    for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
      const code = (e as { code?: unknown }).code;
      parts.push(`${typeof code === 'string' ? `[${code}] ` : ''}${e.message}`);
    }
    console.error(`bench ${name} failed: ${parts.join(' ← caused by ') || String(err)}`);
    process.exit(1);
  }
}
