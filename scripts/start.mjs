// @ts-check
// npm start: builds dist/ when its inputs changed since the last build (scripts/build.mjs), then runs the
// bot from dist/ in this same process, which saves a second Node start-up on every start. The node flags
// of package.json's `start` are the production ones; the Dockerfile runs dist/src/main.js directly with them.
import { buildIfChanged } from './build.mjs';

await buildIfChanged();
/** @type {{ cli: () => Promise<void> }} */
const bot = await import(new URL('../dist/src/main.js', import.meta.url).href);
await bot.cli();
