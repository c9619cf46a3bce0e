// The installable package's build, run by `npm pack` (its `prepack` script): compiles src,
// crypto, gpu and federation to JavaScript with declarations (tsconfig.build.json) into
// build/package, beside the files they read at run time (the wire format's .proto, the
// dashboard, the bundled WDBC data, bin/cohort.js for the demo's members) and a package.json
// that makes them ES modules. The root package.json then packs bin/cohort.js and build/package:
// Node runs no TypeScript under node_modules, and the package holds none but declarations.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const BUILD = join(ROOT, 'build', 'package');
const CODE = ['src', 'crypto', 'gpu', 'federation'];

/** Every file under `dir` (repository-relative), depth first. */
function walk(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = `${dir}/${name}`;
    return statSync(join(ROOT, path)).isDirectory() ? walk(path) : [path];
  });
}

function copy(path: string): void {
  mkdirSync(dirname(join(BUILD, path)), { recursive: true });
  cpSync(join(ROOT, path), join(BUILD, path), { recursive: true });
}

rmSync(BUILD, { recursive: true, force: true });
execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
  cwd: ROOT,
  stdio: 'inherit',
});
// Declarations keep the sources' `.ts` specifiers; the package ships `.js` beside each `.d.ts`.
for (const dir of CODE) {
  for (const file of walk(relative(ROOT, join(BUILD, dir)))) {
    if (!file.endsWith('.d.ts')) continue;
    const path = join(ROOT, file);
    const text = readFileSync(path, 'utf8');
    writeFileSync(path, text.replace(/(from\s+|import\()(['"])(\.{1,2}\/[^'"]+)\.ts\2/g, '$1$2$3.js$2'));
  }
}
// What the code reads at run time besides modules.
for (const dir of CODE) for (const file of walk(dir)) if (!file.endsWith('.ts')) copy(file);
// The demo starts members through bin/cohort.js beside the compiled code; `cohort simulate` and
// the tests read the bundled WDBC. README and LICENSE are packed from the root.
for (const path of ['bin/cohort.js', 'data/wdbc']) copy(path);

const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
// The nearest package.json of every compiled module: ES modules, and the version `cohort
// --version` reads (three folders above src/cli/context, as in a checkout).
const pkg = { name: root.name, version: root.version, private: true, type: 'module' };
writeFileSync(join(BUILD, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
console.error(`built ${relative(ROOT, BUILD)}`);
