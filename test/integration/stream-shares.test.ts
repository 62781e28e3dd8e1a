import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NetworkStreams, shareFilter } from '../../src/alerts/streams.ts';
import { type Devnet, startDevnet } from '../../src/devnet/index.ts';
import { PlatformClient } from '../../src/platform/client.ts';
import type { EventLog } from '../../src/platform/types.ts';
import { waitUntil } from '../helpers/entry-point.ts';

/*
 * A network whose rules watch more collections than one SubscribeEvents request can name: the
 * local platform, like real servers, reads at most 1 MiB of request (about 23,000 addresses).
 * The contracts are split over several streams, and every log of a watched contract arrives (a
 * marketplace log about a collection may match two shares; the pipeline drops repeats by log uid).
 */

let devnet: Devnet;
let platform: PlatformClient;
beforeAll(async () => {
  devnet = await startDevnet({ scale: 'small', blockIntervalMs: 0 });
  platform = new PlatformClient({
    endpoints: devnet.endpoints,
    networks: devnet.networks,
    accessKey: devnet.accessKey,
  });
});
afterAll(async () => {
  await platform?.close();
  await devnet?.close();
});

const elsewhere = (n: number) => `0x${(n + 1).toString(16).padStart(40, 'f')}`;

describe('events streams in shares', () => {
  it('GIVEN 30,000 watched contracts WHEN planned THEN several streams connect, and every log of a sale arrives', async () => {
    const moonCats = devnet.collections.devnet?.find((c) => c.name === 'Moon Cats');
    if (!moonCats) throw new Error('no Moon Cats');
    const market = devnet.info().networks.find((n) => n.name === 'devnet')?.marketplaceContract ?? '';
    const contracts = [moonCats.address, market, ...Array.from({ length: 30_000 }, (_, i) => elsewhere(i))];
    const logs: EventLog[] = [];
    const streams = new NetworkStreams(
      platform,
      'devnet',
      { onLog: (log) => logs.push(log), onReceipt: () => undefined },
      pino({ level: 'silent' }),
    );
    try {
      await streams.plan({ contractAddresses: contracts });
      expect(streams.health()).toMatchObject({ events: 'connected', contracts: 30_002 });
      const mined = await devnet.mine('devnet', [{ kind: 'sale', collection: moonCats.address }]);
      const hash = mined.txnHashes[0];
      await waitUntil(() => logs.some((l) => l.txnHash === hash), 10_000);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const received = new Set(logs.filter((l) => l.txnHash === hash).map((l) => l.uid));
      // The same sale through one stream of the two contracts that matter gives the same logs.
      const direct: EventLog[] = [];
      const one = new NetworkStreams(
        platform,
        'devnet',
        { onLog: (log) => direct.push(log), onReceipt: () => undefined },
        pino({ level: 'silent' }),
      );
      await one.plan({ contractAddresses: [moonCats.address, market] });
      const second = await devnet.mine('devnet', [{ kind: 'sale', collection: moonCats.address }]);
      await waitUntil(() => logs.filter((l) => l.txnHash === second.txnHashes[0]).length >= 2, 10_000);
      await new Promise((resolve) => setTimeout(resolve, 200));
      one.stop();
      const viaShares = new Set(logs.filter((l) => l.txnHash === second.txnHashes[0]).map((l) => l.uid));
      const viaOne = new Set(direct.filter((l) => l.txnHash === second.txnHashes[0]).map((l) => l.uid));
      expect(received.size).toBeGreaterThan(0);
      expect(viaOne.size).toBeGreaterThan(0);
      expect([...viaShares].sort()).toEqual([...viaOne].sort());
    } finally {
      streams.stop();
    }
  });

  it('GIVEN shares WHEN one more contract is watched THEN only its share changes', () => {
    const contracts = Array.from({ length: 12_000 }, (_, i) => elsewhere(i));
    const before = shareFilter({ contractAddresses: contracts }, 5_000);
    const after = shareFilter({ contractAddresses: [...contracts, elsewhere(99_999)] }, 5_000);
    expect(before.length).toBeGreaterThan(1);
    for (const share of before) expect(share.contractAddresses?.length).toBeLessThanOrEqual(5_000);
    const keys = (shares: typeof before) => new Set(shares.map((s) => JSON.stringify(s)));
    const changed = [...keys(after)].filter((k) => !keys(before).has(k));
    expect(changed).toHaveLength(1);
    expect(shareFilter({ contractAddresses: contracts.slice(0, 10) }, 5_000)).toHaveLength(1);
  });
});
