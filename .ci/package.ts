// `npm run package [-- --out <dir>]`: the installable package. Compiles src, crypto, gpu and
// federation to JavaScript with declarations (tsconfig.build.json) into build/package, beside the
// files they read at run time (the wire format's .proto, the dashboard, the bundled WDBC data, the
// example configuration, bin/cohort.js), writes its package.json (bin, exports, files, the
// runtime dependencies only) and packs it with `npm pack` into <dir> (default: the repository
// root). Prints the tarball's path. Node runs no TypeScript under node_modules: the package holds
// none but declarations.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const BUILD = join(ROOT, 'build', 'package');
const CODE = ['src', 'crypto', 'gpu', 'federation'];
const outFlag = process.argv.indexOf('--out');
const OUT = resolve(outFlag >= 0 ? process.argv[outFlag + 1]! : ROOT);

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
for (const path of ['bin/cohort.js', 'data/wdbc', 'config/federation.example.yaml', 'README.md', 'LICENSE'])
  copy(path);

const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
const entry = (path: string) => ({ types: `./${path}.d.ts`, default: `./${path}.js` });
const pkg = {
  name: root.name,
  version: root.version,
  description: root.description,
  license: root.license,
  type: 'module',
  engines: root.engines,
  bin: { cohort: './bin/cohort.js' },
  exports: {
    './cli': entry('src/cli/index'),
    './config': entry('src/config/index'),
    './protocol': entry('src/protocol/index'),
    './services': entry('src/services/index'),
    './audit': entry('src/audit/index'),
    './metrics': entry('src/metrics/index'),
    './package.json': './package.json',
  },
  files: ['bin', 'src', 'crypto', 'gpu', 'federation', 'data', 'config', 'README.md', 'LICENSE'],
  dependencies: root.dependencies,
  optionalDependencies: root.optionalDependencies,
};
writeFileSync(join(BUILD, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
// The locked tree ships with it (npm-shrinkwrap.json, the lockfile less the tools): an install
// gets exactly the versions the tests ran with, from the npm cache when they are there.
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { dev?: boolean } & Record<string, unknown>>;
} & Record<string, unknown>;
/** The registry's tarball URL of the package at lockfile path `path` (`…node_modules/@s/n`). */
function tarballUrl(path: string, version: string): string {
  const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
  return `https://registry.npmjs.org/${name}/-/${name.split('/').at(-1)}-${version}.tgz`;
}
const packages = Object.fromEntries(
  Object.entries(lock.packages)
    .filter(([path, p]) => path !== '' && p.dev !== true)
    .map(([path, p]) => [path, { resolved: tarballUrl(path, p.version as string), ...p }]),
);
const rootEntry = Object.fromEntries(
  Object.entries(pkg).filter(([k]) =>
    ['name', 'version', 'license', 'engines', 'bin', 'dependencies', 'optionalDependencies'].includes(k),
  ),
);
writeFileSync(
  join(BUILD, 'npm-shrinkwrap.json'),
  `${JSON.stringify({ ...lock, packages: { '': rootEntry, ...packages } }, null, 2)}\n`,
);
mkdirSync(OUT, { recursive: true });
const packed = execFileSync('npm', ['pack', '--pack-destination', OUT, '--silent'], {
  cwd: BUILD,
  encoding: 'utf8',
}).trim();
console.log(join(OUT, packed.split('\n').at(-1)!));
