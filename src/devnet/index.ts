/**
 * The local platform ("devnet"): a real HTTP server speaking the platform's wire protocol over a
 * seeded dataset and a simulated chain, with a control API for tests and demos.
 *
 * @example
 * const devnet = await startDevnet({ seed: 7 });
 * const client = new PlatformClient({ endpoints: devnet.endpoints, networks: devnet.networks, accessKey: devnet.accessKey });
 * const moonCats = devnet.collections.devnet?.find((c) => c.name === 'Moon Cats');
 * if (moonCats) await devnet.mine('devnet', [{ kind: 'sale', collection: moonCats.address }]);
 * await devnet.close();
 */
import { DevnetInstance } from './devnet.ts';
import type { Devnet, DevnetOptions } from './types.ts';

/** Starts a devnet in this process (port 0 by default: any free port). */
export function startDevnet(options: DevnetOptions = {}): Promise<Devnet> {
  return DevnetInstance.start(options);
}

export { DEFAULT_PROJECT_ID } from './devnet.ts';
export { EVENTS } from './events.ts';
export type * from './types.ts';
