import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Reply } from '../../src/core/reply.ts';
import { type Devnet, startDevnet } from '../../src/devnet/index.ts';
import { nativeSymbolsOf } from '../../src/main.ts';
import { DeliveryJournal } from '../../src/store/files/journal/journal.ts';
import { StateStore } from '../../src/store/files/state.ts';
import { type ChatInbox, startChatInbox } from '../fakes/chat-inbox.ts';

/*
 * Issues 5 and 9: the bot process is killed (SIGKILL) at random moments in the middle of a burst of
 * 1,000 alerts and started again, several times; in the end every alert is in the chat exactly once.
 *
 * The bot runs as a child process (test/fixtures/alert-bot.ts: the real pipeline, dispatcher and
 * fsynced journal) and delivers to a slow chat stand-in over HTTP (test/fakes/chat-inbox.ts) that,
 * like Discord's enforced message nonce, answers a repeated idempotency key with the first message.
 *
 * The boundary this test keeps to: an event counts as received once `journal.record` resolved. The
 * platform does not replay events a stopped bot missed, so a kill between the stream delivering a log
 * and the journal holding it loses that event; no restart can bring it back. The burst is therefore
 * mined while the first child runs, the inbox holds its answers until the child has journaled all
 * 1,000 alerts, and only then do the kills start: what they interrupt is the delivery of the burst
 * (sends in flight, `sending`/`sent` journal writes, restarts replaying the journal).
 *
 * The kill moments are random; the verdict does not depend on them. Delivering 1,000 alerts takes the
 * inbox at least PER_REPLY_MS × 1,000 ms, longer than the longest kill schedule, so every kill lands
 * while alerts are still on their way.
 */

const ROOT = join(import.meta.dirname, '..', '..');
const FIXTURE = join(ROOT, 'test', 'fixtures', 'alert-bot.ts');
const BLOCKS = 50;
const PER_BLOCK = 20;
const ALERTS = BLOCKS * PER_BLOCK;
const KILLS = 4;
/** A kill comes this long (uniformly random) after the previous child reported ready. */
const KILL_AFTER_MS: readonly [number, number] = [200, 1_000];
/** The inbox answers a message in 0-2 ms plus this per alert it carries: 1,000 alerts take 5 s or more. */
const PER_REPLY_MS = 5;
const CHAT_ID = 'crash';
/** With no alert delivered for this long (counted from the last child's start at the earliest), the deliveries are over, complete or not. */
const STALL_MS = 10_000;

interface Child {
  process: ChildProcessWithoutNullStreams;
  /** `recorded <n>` lines: alerts this child journaled. */
  recorded: number;
  stderr: string;
  ready: Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout: string;
}

let devnet: Devnet;
let inbox: ChatInbox;
let dataDir: string;
const children: Child[] = [];

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const between = ([min, max]: readonly [number, number]) => min + Math.random() * (max - min);

function startChild(): Child {
  const info = devnet.info();
  const platform = {
    endpoints: devnet.endpoints,
    networks: devnet.networks,
    accessKey: devnet.accessKey,
    secretToken: devnet.secretToken,
    projectId: devnet.projectId,
    marketplaceContracts: Object.fromEntries(info.networks.map((n) => [n.name, [n.marketplaceContract]])),
    nativeSymbols: nativeSymbolsOf(devnet),
  };
  const process_ = spawn(process.execPath, ['--import', 'tsx', FIXTURE], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ALERT_BOT_PLATFORM: JSON.stringify(platform),
      ALERT_BOT_DATA_DIR: dataDir,
      ALERT_BOT_INBOX_URL: inbox.url,
      ALERT_BOT_LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const child: Child = {
    process: process_,
    recorded: 0,
    stderr: '',
    stdout: '',
    ready: Promise.resolve(),
    exited: new Promise((resolve) => process_.on('exit', (code, signal) => resolve({ code, signal }))),
  };
  child.ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`child not ready after 30 s:\n${child.stderr}`)), 30_000);
    process_.stdout.on('data', (chunk: Buffer) => {
      child.stdout += chunk.toString();
      const lines = child.stdout.split('\n');
      child.stdout = lines.pop() ?? '';
      for (const line of lines) {
        if (line === 'ready') {
          clearTimeout(timer);
          resolve();
        } else if (line.startsWith('recorded ')) {
          child.recorded = Number(line.slice('recorded '.length));
        }
      }
    });
    void child.exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`child exited (${code ?? signal}) before it was ready:\n${child.stderr}`));
    });
  });
  process_.stderr.on('data', (chunk: Buffer) => {
    child.stderr += chunk.toString();
  });
  children.push(child);
  return child;
}

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

/** The listing price of the n-th alert of the burst: distinct, so each alert can be told apart. */
const priceOf = (n: number): string => `${n + 1}.5`;

/** How many times each alert of the burst reached the chat, and what else did. */
function tally(): { counts: Map<string, number>; unexpected: string[]; messages: number } {
  const counts = new Map<string, number>();
  for (let n = 0; n < ALERTS; n++) counts.set(priceOf(n), 0);
  const unexpected: string[] = [];
  const messages = inbox.messages().filter((m) => m.chatId === CHAT_ID);
  for (const message of messages) {
    for (const reply of message.replies as Reply[]) {
      const price = / for ([\d.,]+) DEV$/.exec(reply.title ?? '')?.[1]?.replaceAll(',', '');
      const seen = price === undefined ? undefined : counts.get(price);
      if (price === undefined || seen === undefined) unexpected.push(reply.title ?? '(no title)');
      else counts.set(price, seen + 1);
    }
  }
  return { counts, unexpected, messages: messages.length };
}

function delivered(): number {
  let n = 0;
  for (const count of tally().counts.values()) if (count > 0) n++;
  return n;
}

beforeAll(async () => {
  devnet = await startDevnet({ scale: 'small', blockIntervalMs: 0 });
  inbox = await startChatInbox({ latencyMs: [0, 2], perReplyMs: PER_REPLY_MS });
  dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-crash-'));
  const moonCats = devnet.collections.devnet?.find((c) => c.name === 'Moon Cats');
  if (!moonCats) throw new Error('the devnet has no Moon Cats');
  // The rule is in the state file before the first child starts; from then on the children own the file.
  const store = await StateStore.open(join(dataDir, 'state.json'));
  await store.addRule(
    {
      destination: { platform: 'console', chatId: CHAT_ID },
      network: 'devnet',
      collection: moonCats.address.toLowerCase(),
      collectionName: moonCats.name,
      kinds: ['listing'],
      paused: false,
      createdBy: 'crash-test',
      createdAt: new Date().toISOString(),
    },
    10,
  );
});

afterAll(async () => {
  for (const child of children) {
    if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL');
  }
  await Promise.all(children.map((c) => c.exited));
  await inbox?.close();
  await devnet?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('crash test: SIGKILL during a burst of alerts', () => {
  it(`GIVEN ${ALERTS} journaled alerts WHEN the bot is killed ${KILLS} times while delivering THEN each is delivered exactly once`, async () => {
    const started = Date.now();
    const moonCats = devnet.collections.devnet?.find((c) => c.name === 'Moon Cats');
    if (!moonCats) throw new Error('the devnet has no Moon Cats');
    inbox.hold();
    let child = startChild();
    await child.ready;

    for (let block = 0; block < BLOCKS; block++) {
      await devnet.mine(
        'devnet',
        Array.from({ length: PER_BLOCK }, (_, i) => ({
          kind: 'listing' as const,
          collection: moonCats.address,
          price: priceOf(block * PER_BLOCK + i),
        })),
      );
    }
    const first = child;
    await until(() => first.recorded >= ALERTS, 40_000, `${ALERTS} journaled alerts (have ${first.recorded})`);
    const journaledAfter = Date.now() - started;
    inbox.release();

    const killedAt: number[] = [];
    for (let k = 0; k < KILLS; k++) {
      await sleep(between(KILL_AFTER_MS));
      killedAt.push(delivered());
      const dying = child;
      dying.process.kill('SIGKILL');
      const { signal } = await dying.exited;
      expect(signal).toBe('SIGKILL');
      child = startChild();
      await child.ready;
    }

    let progress = { delivered: delivered(), at: Date.now() };
    await until(
      () => {
        const now = delivered();
        if (now > progress.delivered) progress = { delivered: now, at: Date.now() };
        return now === ALERTS || Date.now() - progress.at > STALL_MS;
      },
      90_000,
      'the deliveries to end',
    );
    const last = child;
    last.process.kill('SIGTERM');
    expect(await last.exited).toEqual({ code: 0, signal: null });

    const journal = await DeliveryJournal.open(join(dataDir, 'deliveries.jsonl'), { fsync: false });
    const unfinished = journal.unfinished();
    const stats = journal.stats();
    await journal.close();

    const { counts, unexpected, messages } = tally();
    const values = [...counts.values()];
    const sent = values.reduce((sum, n) => sum + n, 0);
    const lost = values.filter((n) => n === 0).length;
    const duplicated = values.reduce((sum, n) => sum + Math.max(0, n - 1), 0);
    const resends = inbox.stats().deduplicated;
    console.log(
      `crash test: ${ALERTS} alerts, ${killedAt.length} kills, ${ALERTS - lost} delivered, ${lost} lost, ` +
        `${duplicated} duplicated, ${resends} resends absorbed by idempotency keys ` +
        `(${sent} alerts in ${messages} messages; kills with ${killedAt.join(', ')} delivered; ` +
        `journaled in ${(journaledAfter / 1000).toFixed(1)} s, done in ${((Date.now() - started) / 1000).toFixed(1)} s)`,
    );
    if (lost || duplicated || unexpected.length || unfinished.length) {
      for (const [i, c] of children.entries()) console.log(`--- child ${i + 1} stderr ---\n${c.stderr.slice(-4_000)}`);
    }

    expect(killedAt).toHaveLength(KILLS);
    // Each kill interrupted the burst: alerts were still on their way.
    expect(killedAt.every((n) => n < ALERTS)).toBe(true);
    expect(unexpected).toEqual([]);
    expect({ lost, duplicated }).toEqual({ lost: 0, duplicated: 0 });
    expect(sent).toBe(ALERTS);
    expect(unfinished.map((r) => `${r.id}: ${r.state}`)).toEqual([]);
    expect(stats).toMatchObject({ records: ALERTS, sent: ALERTS, pending: 0, sending: 0, failed: 0, dropped: 0 });
  }, 120_000);
});
