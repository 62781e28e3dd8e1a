/**
 * `npm run register-commands`: replaces the bot's Discord application commands with the command
 * registry (in DISCORD_GUILD_ID when set, globally otherwise) and exits.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCommands } from '../../bot/registry.ts';
import { ConfigError, loadConfig, secretsOf } from '../../config.ts';
import { createLogger } from '../../logger.ts';
import { deliveryErrorOf, registerCommands } from './adapter.ts';

/** The command files beside the sources, or beside the build in dist/ (this entry is not bundled with main.ts). */
const COMMANDS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'commands');

async function main(): Promise<number> {
  if (existsSync('.env')) process.loadEnvFile('.env');
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`register-commands: ${error.message}\n`);
    return 78;
  }
  const logger = createLogger(config.logLevel, secretsOf(config));
  if (!config.discord) {
    logger.error('DISCORD_TOKEN and DISCORD_APPLICATION_ID are required to register commands.');
    return 78;
  }
  try {
    const commands = await loadCommands(COMMANDS_DIR);
    const result = await registerCommands({ config: config.discord, commands });
    logger.info(
      { ...result, application: config.discord.applicationId, guild: config.discord.guildId },
      'discord commands registered',
    );
    return 0;
  } catch (error) {
    logger.error({ reason: deliveryErrorOf(error).message }, 'discord commands could not be registered');
    return 1;
  }
}

process.exitCode = await main();
