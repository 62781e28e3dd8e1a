// Runs one benchmark by name: `npm run bench -- stream-parse` runs bench/stream-parse.ts.
// Without a name, lists them.
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const names = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && f !== 'run.ts' && !f.startsWith('_'))
  .map((f) => f.slice(0, -3))
  .sort();
const wanted = process.argv.slice(2);
if (wanted.length === 0) {
  console.log(`benchmarks: ${names.join(', ')}\nrun one with: npm run bench -- <name>`);
} else {
  for (const name of wanted) {
    if (!names.includes(name)) {
      console.error(`no benchmark "${name}"; known: ${names.join(', ')}`);
      process.exit(2);
    }
    console.log(`# ${name}`);
    await import(pathToFileURL(join(here, `${name}.ts`)).href);
  }
}
