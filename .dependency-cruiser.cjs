/**
 * The layers of DESIGN.md ("Layout", "Layers"), checked by `npm run lint:layers` (part of `npm test`):
 *
 *   main -> chat -> bot (engine and the command contract);
 *   commands -> bot's contract and the services (alerts, digests, roles);
 *   services -> delivery -> market -> core -> platform.
 *   Store and deployment implement core's ports and are chosen by main; the engine finds commands at
 *   start-up, it does not import them. No module imports one above it; no import cycles. What names a
 *   chat platform's type lives in that platform's adapter and nowhere else.
 *
 * Each layer lists what it may import (besides itself); anything else of ours is a violation. Type-only
 * imports count: a layer that names another's types depends on it. Tests and benchmarks may import
 * anything and are not checked.
 */
const { existsSync } = require('node:fs');

/** Where each layer lives. */
const LAYER = {
  /** The composition root, and the process entries that compose their own job the same way. */
  roots: [
    '^src/main[.]ts$',
    // `npm run register-commands`: reads the configuration and registers the Discord commands.
    '^src/chat/discord/register[.]ts$',
    // `npm run migrate-data`: reads the configuration and copies the data directory into PostgreSQL.
    '^src/store/pg/migrate-data[.]ts$',
  ],
  config: ['^src/config[.]ts$'],
  chat: ['^src/chat/'],
  commands: ['^commands/'],
  bot: ['^src/bot/'],
  alerts: ['^src/alerts/'],
  digests: ['^src/digests/'],
  roles: ['^src/roles/'],
  delivery: ['^src/delivery/'],
  market: ['^src/market/'],
  core: ['^src/core/'],
  platform: ['^src/platform/'],
  store: ['^src/store/'],
  deployment: ['^src/deployment/'],
  devnet: ['^src/devnet/'],
  health: ['^src/health/'],
  /** Leaf helpers with no import of ours (safe record reads, PNG encoding, the redacting logger): any layer may use them. */
  shared: ['^src/records[.]ts$', '^src/png[.]ts$', '^src/logger[.]ts$'],
};

const ROOTS = LAYER.roots;
const OURS = '^(src|commands)/';

/**
 * What each layer may import besides itself (the roots may import any layer). The services are
 * three layers side by side: none imports another ("digests never reach into alerts").
 */
const MAY_IMPORT = {
  config: ['platform', 'core', 'shared'],
  chat: ['bot', 'delivery', 'market', 'core', 'platform', 'shared'],
  commands: ['bot', 'alerts', 'digests', 'roles', 'delivery', 'market', 'core', 'platform', 'shared'],
  bot: ['market', 'core', 'platform', 'shared'],
  alerts: ['delivery', 'market', 'core', 'platform', 'shared'],
  digests: ['delivery', 'market', 'core', 'platform', 'shared'],
  roles: ['delivery', 'market', 'core', 'platform', 'shared'],
  delivery: ['market', 'core', 'platform', 'shared'],
  market: ['core', 'platform', 'shared'],
  core: ['platform', 'shared'],
  platform: ['shared'],
  store: ['core', 'platform', 'shared'],
  deployment: ['store', 'delivery', 'market', 'core', 'platform', 'shared'],
  devnet: ['platform', 'shared'],
  health: ['core'],
  shared: [],
};

const WHY = {
  config: 'the configuration is parsed from the environment and read by main only',
  chat: 'chat adapters talk to the engine (main -> chat -> bot) and implement delivery sinks; they get their settings passed in and never import config',
  commands: "commands use the bot's contract and the services (alerts, digests, roles) and what lies below them",
  bot: 'the engine and command contract stand on market, core and platform; they do not import the services, and the engine finds commands at start-up',
  alerts: 'a service: hands work to delivery, never takes a command context, never imports another service',
  digests: 'a service: hands work to delivery, never reaches into alerts or the engine',
  roles: 'a service: hands work to delivery, never imports another service or the engine',
  delivery: 'delivery is below the services: it records and sends what they hand it',
  market: 'the market vocabulary stands on core and platform only',
  core: 'core is shared vocabulary and ports: only platform is below it',
  platform: 'the platform client is the bottom layer',
  store: "store adapters implement core's ports and are chosen by main",
  deployment: 'a deployment assembles stores, leases and delivery claims for main',
  devnet: 'the local platform speaks the platform API and nothing else of the bot',
  health: 'health imports core only: status data is handed in',
  shared: 'leaf helpers import nothing of ours',
};

/**
 * Imports that break a rule and are let through until the work that removes them lands, each named
 * exactly (module paths as in the report, no patterns) with why:
 *   { from: 'src/alerts/x.ts', to: 'src/bot/y.ts', why: 'known violation, removed by ...' }
 * Every other import of `from` is still checked, and an entry whose import is gone fails the check
 * (rule `known-violation-gone`) until it is removed from here. None at present.
 */
const KNOWN_VIOLATIONS = [];

const pathsOf = (layers) => layers.flatMap((name) => LAYER[name]);

/** One rule per layer: it imports nothing of ours beyond itself and `MAY_IMPORT`. */
const layerRules = Object.entries(MAY_IMPORT).map(([layer, allowed]) => ({
  name: `${layer}-imports-below`,
  comment: `${layer} may import ${allowed.length ? allowed.join(', ') : 'nothing of ours'}: ${WHY[layer]}.`,
  severity: 'error',
  from: { path: LAYER[layer], pathNot: ROOTS },
  to: { path: OURS, pathNot: pathsOf([layer, ...allowed]) },
}));

const exact = (file) => `^${file.replace(/[.]/g, '[.]')}$`;
const listOf = (paths) => (paths === undefined ? [] : [paths].flat());
const matches = (restriction, file) =>
  (restriction.path === undefined || listOf(restriction.path).some((p) => new RegExp(p).test(file))) &&
  !listOf(restriction.pathNot).some((p) => new RegExp(p).test(file));

for (const known of KNOWN_VIOLATIONS) {
  if (!existsSync(known.from)) {
    throw new Error(`.dependency-cruiser.cjs: ${known.from} is gone; remove its entry from KNOWN_VIOLATIONS.`);
  }
}

/**
 * A rule with its known violations let through: the modules they come from are checked by a copy of
 * the rule that lets through exactly their listed imports.
 */
function withKnownViolations(rule) {
  const known = KNOWN_VIOLATIONS.filter(
    (v) => !rule.to.circular && matches(rule.from, v.from) && matches(rule.to, v.to),
  );
  if (known.length === 0) return [rule];
  const files = [...new Set(known.map((v) => v.from))];
  return [
    { ...rule, from: { ...rule.from, pathNot: [...listOf(rule.from.pathNot), ...files.map(exact)] } },
    ...files.map((file) => ({
      ...rule,
      comment: `${rule.comment} Known violations let through: ${known
        .filter((v) => v.from === file)
        .map((v) => `${v.to} (${v.why})`)
        .join('; ')}.`,
      from: { path: exact(file) },
      to: {
        ...rule.to,
        pathNot: [...listOf(rule.to.pathNot), ...known.filter((v) => v.from === file).map((v) => exact(v.to))],
      },
    })),
  ];
}

module.exports = {
  required: KNOWN_VIOLATIONS.map((v) => ({
    name: 'known-violation-gone',
    comment: `${v.from} no longer imports ${v.to}: remove that entry from KNOWN_VIOLATIONS.`,
    severity: 'error',
    module: { path: exact(v.from) },
    to: { path: exact(v.to) },
  })),
  forbidden: [
    ...layerRules,
    {
      name: 'no-circular',
      comment: 'No import cycles, type-only imports included: a layer below never needs one above.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-import-of-roots',
      comment: 'main and the process entries compose the others; nothing imports them.',
      severity: 'error',
      from: { path: OURS },
      to: { path: ROOTS },
    },
    {
      name: 'commands-found-at-start',
      comment: 'The engine finds commands at start-up (bot/registry.ts); no module of src imports one.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: LAYER.commands },
    },
    {
      name: 'devnet-only-from-main',
      comment: 'The local platform is started in-process by main (and by tests); nothing else imports it.',
      severity: 'error',
      from: { path: OURS, pathNot: ['^src/main[.]ts$', ...LAYER.devnet] },
      to: { path: LAYER.devnet },
    },
    {
      name: 'store-chosen-by-main',
      comment: 'Stores and deployments are chosen by main; the others use them through core ports.',
      severity: 'error',
      from: { path: OURS, pathNot: ['^src/main[.]ts$', ...LAYER.store, ...LAYER.deployment] },
      to: { path: [...LAYER.store, ...LAYER.deployment] },
    },
    {
      name: 'pg-store-not-file-store',
      comment:
        'The PostgreSQL adapter shares only the record checks (store/schema.ts), LazyWrite and the completeness tally with the file adapter; migrate-data copies the files, so reading them is its job.',
      severity: 'error',
      from: { path: '^src/store/pg/', pathNot: ROOTS },
      to: {
        path: ['^src/store/files/', '^src/store/[^/]+$'],
        pathNot: ['^src/store/schema[.]ts$', '^src/store/lazy-write[.]ts$', '^src/store/completeness-tally[.]ts$'],
      },
    },
    {
      name: 'file-store-not-pg-store',
      comment: 'The file adapter does not import the PostgreSQL adapter.',
      severity: 'error',
      from: { path: ['^src/store/files/', '^src/store/[^/]+$'] },
      to: { path: '^src/store/pg/' },
    },
    {
      name: 'discord-types-in-discord-adapter',
      comment: 'What names a Discord type (embeds, interactions) lives in src/chat/discord/ and nowhere else.',
      severity: 'error',
      from: { path: OURS, pathNot: '^src/chat/discord/' },
      to: { path: '^node_modules/(discord[.]js|@discordjs/[^/]+|discord-api-types)/' },
    },
    {
      name: 'telegram-types-in-telegram-adapter',
      comment: 'What names a Telegram type (inline keyboards, updates) lives in src/chat/telegram/ and nowhere else.',
      severity: 'error',
      from: { path: OURS, pathNot: '^src/chat/telegram/' },
      to: { path: '^node_modules/(grammy|@grammyjs/[^/]+)/' },
    },
    {
      name: 'module-outside-layers',
      comment: 'A module of src/ in none of the layers above: give it one here (and in DESIGN.md).',
      severity: 'error',
      from: { path: '^src/', pathNot: pathsOf(Object.keys(LAYER)) },
      to: {},
    },
    {
      name: 'import-outside-layers',
      comment: 'An import of a module of src/ in none of the layers above: give it one here (and in DESIGN.md).',
      severity: 'error',
      from: {},
      to: { path: '^src/', pathNot: pathsOf(Object.keys(LAYER)) },
    },
  ].flatMap(withKnownViolations),
  options: {
    doNotFollow: { path: 'node_modules' },
    moduleSystems: ['es6'],
    // Type-only imports are dependencies too: a layer naming another's types depends on it.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
