// The verification page as the bot runs it: a real wallet file, the real service and listener on a
// loopback port, contract wallets checked through a real devnet's chain RPC, and logs captured.

import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { checkInitData } from '../../src/chat/telegram/web-app.ts';
import type { CommunityRef } from '../../src/core/wallets.ts';
import { type Devnet, startDevnet } from '../../src/devnet/index.ts';
import { SignatureChecker } from '../../src/roles/siwe.ts';
import { WalletVerification } from '../../src/roles/verification.ts';
import { type PageServer, startPageServer } from '../../src/roles/web.ts';
import { FileWalletStore } from '../../src/store/files/wallets.ts';

export const TELEGRAM_TOKEN = '123456:TEST-token-abcdefghijklmnopqrstuvwxyz';

export interface VerifyPageHarness {
  devnet: Devnet;
  chainId: number;
  store: FileWalletStore;
  verification: WalletVerification;
  server: PageServer;
  /** The public origin (the listener's own address). */
  origin: string;
  /** Every log line written so far. */
  logs: () => string;
  /** Moves the clock. */
  advance: (ms: number) => void;
  close: () => Promise<void>;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export async function startVerifyPage(options: { publicUrl?: string } = {}): Promise<VerifyPageHarness> {
  const devnet = await startDevnet({ scale: 'small' });
  const chainId = devnet.networks[0]?.chainId ?? 0;
  const dir = await mkdtemp(join(tmpdir(), 'floorwatch-verify-'));
  const store = await FileWalletStore.open(join(dir, 'wallets.jsonl'));
  let lines = '';
  const logger = pino(
    { level: 'debug' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines += chunk.toString();
        done();
      },
    }),
  );
  let offset = 0;
  const now = () => new Date(Date.now() + offset);
  const port = await freePort();
  const origin = options.publicUrl ?? `http://127.0.0.1:${port}`;
  const verification = new WalletVerification({
    store,
    checker: new SignatureChecker(devnet.chainRpcUrl.replace('{network}', 'devnet')),
    logger,
    publicUrl: new URL(origin),
    chainId,
    miniAppIdentity: (initData, at) => {
      const checked = checkInitData(initData, TELEGRAM_TOKEN, at);
      return checked.ok ? { ok: true, person: `telegram:${checked.userId}` } : { ok: false };
    },
    now,
  });
  const server = await startPageServer({ host: '127.0.0.1', port, publicUrl: new URL(origin), verification, logger });
  return {
    devnet,
    chainId,
    store,
    verification,
    server,
    origin,
    logs: () => lines,
    advance: (ms) => {
      offset += ms;
    },
    async close() {
      await server.close();
      await store.close();
      await devnet.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export const COMMUNITY: CommunityRef = { key: 'discord:1000', name: 'Moon Cats Club' };
