// One sale watched by 2,000 chats a platform (issue 26.7): how fast the bot delivers it against the
// platforms' global limits, through the real path (test/helpers/fanout.ts): the DeliveryRecorder and
// the fsync'd DeliveryJournal, the Dispatcher's lanes, the real grammy and discord.js clients with
// the bot's global pace (Telegram: RatePacer at TELEGRAM_MESSAGES_PER_SECOND; Discord: discord.js's
// REST queue at DISCORD_REQUESTS_PER_SECOND), against the stand-ins keeping the real limits
// (Telegram 30 messages a second per bot, 1 a second per chat, 20 a minute per group; Discord 50
// requests a second and 5 messages per 5 s per channel), answering 429 past them.
//
// Two sales are recorded one after the other, each for every chat (a tenth of the Telegram chats are
// groups); both platforms deliver at the same time, each under its own limit. Figures per platform:
// messages a second from the first message to the last against the ceiling (goal >= 90 %), the
// 429s the stand-in answered (goal: a few at most, none twice to one chat), chats that got the sales
// out of order or twice (goal: none), and how often an alert was made into a message (once per
// alert and kind of chat, not once per chat). The machine's load average is printed with them.
//
//   npm run bench -- fanout-rate
//   FANOUT_CHATS=500 npm run bench -- fanout-rate     (fewer chats a platform, a shorter run)
import { cpus, loadavg } from 'node:os';
import { type PlatformFigures, runFanout } from '../test/helpers/fanout.ts';

const chats = Number(process.env.FANOUT_CHATS ?? 2_000);
const SALES = 2;
const load = () => `${loadavg()[0]?.toFixed(1)} on ${cpus().length} CPUs`;

console.log(`machine load average (1 min) at the start: ${load()}`);
console.log(
  `${chats} Telegram chats (every 10th a group) and ${chats} Discord channels each watch the collection; ${SALES} sales recorded one after the other; journal fsync on`,
);
const started = performance.now();
const cpu0 = process.cpuUsage();
const results = await runFanout({
  telegramChats: chats,
  discordChannels: chats,
  sales: SALES,
  timeoutMs: Math.max(60_000, ((chats * SALES) / 25) * 1_000 * 1.5),
});
const cpu = process.cpuUsage(cpu0);
const wall = (performance.now() - started) / 1_000;

const line = (f: PlatformFigures) => {
  const share = (f.perSecond / f.ceiling) * 100;
  const met = share >= 90 && f.chatsRefusedTwice === 0 && f.outOfOrder === 0 && f.duplicated === 0;
  return `  ${f.platform}: ${f.delivered} of ${f.chats * SALES} sales delivered in ${f.messages} messages over ${f.seconds.toFixed(1)} s: ${f.perSecond.toFixed(1)} messages/s = ${share.toFixed(1)}% of the ${f.ceiling}/s ceiling; gaps between messages p50 ${f.gapMs.p50} ms, p99 ${f.gapMs.p99} ms, max ${f.gapMs.max} ms; 429s ${f.refusals} (${f.globalRefusals} global, ${f.chatsRefusedTwice} chats refused twice); out of order ${f.outOfOrder}, duplicated ${f.duplicated}; alert made into a message ${f.imageLookups} times; goal >= 90% of the ceiling, no 429 loop, order kept: ${met ? 'MET' : 'NOT met'}`;
};
console.log('fanout-rate:');
for (const f of results) console.log(line(f));
console.log(
  `  bench process: ${wall.toFixed(1)} s wall, ${((cpu.user + cpu.system) / 1000 / wall / 10).toFixed(0)}% of one core (bot, both clients and both stand-ins); machine load average (1 min) at the end: ${load()}`,
);
