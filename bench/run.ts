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
  await BENCHES[name]!();
}
