// The node flags of the production start command (package.json's `start`: `node <flags>
// scripts/start.mjs`, which checks the build and runs dist/src/main.js in the same process; the
// Dockerfile's CMD runs dist/src/main.js with the same flags), so that benchmarks of the built bot run
// it as it runs for real.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export function startNodeFlags(): string[] {
  const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as {
    scripts: { start: string };
  };
  const words = pkg.scripts.start.trim().split(/\s+/);
  const script = words.indexOf('scripts/start.mjs');
  if (words[0] !== 'node' || script < 0) throw new Error(`unexpected start script: ${pkg.scripts.start}`);
  return words.slice(1, script);
}
