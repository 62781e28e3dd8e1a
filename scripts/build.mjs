// @ts-check
// Builds dist/ with esbuild: one bundle per entry point (the bot, the local platform's CLI,
// register-commands, migrate-data, the chart worker and each command file), source maps beside them.
//
//   node scripts/build.mjs               build now (npm run build)
//   node scripts/build.mjs --if-changed  build only when the inputs changed since the last build
//                                        (npm run devnet, ...; npm start calls buildIfChanged itself)
//
// "The inputs" are the contents of src/, commands/, package.json, package-lock.json, tsconfig.json
// and this file, hashed into dist/.build-stamp after each build. Contents, not modification times: a
// checkout or a copy that keeps old times cannot leave a stale build behind, and touching a file
// does not cost a rebuild.
//
// Packages in package.json's `dependencies` are installed at run time and stay external; everything
// else the sources import (valibot, viem: a few functions each) is bundled, so a production install
// (`npm ci --omit=dev`) needs neither them nor esbuild, which is a development dependency.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = resolve(import.meta.dirname, '..');
const OUT_DIR = join(ROOT, 'dist');
const STAMP = join(OUT_DIR, '.build-stamp');
const INPUT_DIRS = ['src', 'commands'];
const INPUT_FILES = ['package.json', 'package-lock.json', 'tsconfig.json', 'scripts/build.mjs'];
const FIXED_ENTRIES = [
  'src/main.ts',
  'src/devnet/cli.ts',
  'src/chat/discord/register.ts',
  'src/digests/chart-worker.ts',
  'src/chat/images/draw-worker.ts',
  'src/store/pg/migrate-data.ts',
];

/** @param {string} dir @returns {string[]} every file under `dir`, relative to the root, sorted */
function filesUnder(dir) {
  const absolute = join(ROOT, dir);
  if (!existsSync(absolute)) return [];
  return readdirSync(absolute, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)))
    .sort();
}

/** A hash of every input's path and content. */
function fingerprint() {
  const hash = createHash('sha256');
  for (const file of [...INPUT_DIRS.flatMap(filesUnder), ...INPUT_FILES]) {
    hash.update(file).update('\0');
    const path = join(ROOT, file);
    hash.update(existsSync(path) ? readFileSync(path) : 'missing').update('\0');
  }
  return hash.digest('hex');
}

function entryPoints() {
  const commands = readdirSync(join(ROOT, 'commands'))
    .filter((name) => name.endsWith('.ts'))
    .sort()
    .map((name) => `commands/${name}`);
  return [...FIXED_ENTRIES, ...commands];
}

/** @returns {string[]} the packages installed at run time */
function runtimePackages() {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  return Object.keys(pkg.dependencies ?? {});
}

/** @returns {Promise<typeof import('esbuild')>} */
async function loadEsbuild() {
  try {
    return await import('esbuild');
  } catch {
    console.error(
      'floorwatch: dist/ is missing or older than the sources, and esbuild is not installed here (a production install: npm ci --omit=dev or npm prune --omit=dev).\n' +
        'Build where the development dependencies are installed: npm ci && npm run build.',
    );
    process.exit(1);
  }
}

/** @returns {import('esbuild').BuildOptions} */
function options() {
  return {
    absWorkingDir: ROOT,
    entryPoints: entryPoints(),
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outdir: 'dist',
    outbase: '.',
    sourcemap: true,
    sourcesContent: false,
    logLevel: 'warning',
    external: runtimePackages(),
  };
}

/** Builds dist/ afresh and stamps it with the inputs' fingerprint (taken before the build reads them). */
export async function build() {
  const esbuild = await loadEsbuild();
  const stamp = fingerprint();
  rmSync(OUT_DIR, { recursive: true, force: true });
  try {
    await esbuild.build(options());
  } catch {
    // esbuild has printed the errors; a half-written dist/ gets no stamp, so the next start builds again.
    process.exit(1);
  } finally {
    // Its service process would otherwise live as long as the bot that npm start runs next in this process.
    await esbuild.stop();
  }
  writeFileSync(STAMP, `${stamp}\n`);
}

function upToDate() {
  return existsSync(STAMP) && readFileSync(STAMP, 'utf8').trim() === fingerprint();
}

/** Builds dist/ when its inputs changed since the last build; otherwise only hashes them (about 20 ms). */
export async function buildIfChanged() {
  if (!upToDate()) await build();
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const mode = process.argv[2];
  if (mode === '--if-changed') {
    await buildIfChanged();
  } else if (mode === undefined) {
    await build();
  } else {
    console.error(`usage: node scripts/build.mjs [--if-changed]; got ${mode}`);
    process.exit(2);
  }
}
