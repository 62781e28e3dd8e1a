// The node flags of the production start command (package.json's `start`: the build check, then
// `node <flags> dist/src/main.js`, which the Dockerfile's CMD repeats), so that benchmarks of the
// built bot run it as it runs for real.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export function startNodeFlags(): string[] {
  const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as {
    scripts: { start: string };
  };
  const command = pkg.scripts.start.split('&&').at(-1) ?? '';
  const words = command.trim().split(/\s+/);
  const main = words.indexOf('dist/src/main.js');
  if (words[0] !== 'node' || main < 0) throw new Error(`unexpected start script: ${pkg.scripts.start}`);
  return words.slice(1, main);
}
