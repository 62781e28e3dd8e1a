import { errors } from '../errors.ts';
import { Prng } from '../prng.ts';
import { checkEnum, type In, type Json } from '../validate.ts';
import type { RequestContext, UnaryOperation } from './context.ts';

const DAY_MS = 86_400_000;
const MAX_DAYS = 731;
const INTERVALS = ['DAY', 'WEEK', 'MONTH'] as const;

function readDate(filter: In, key: string): number {
  const text = filter.optString(key);
  const match = text ? /^(\d{4})-(\d{2})-(\d{2})$/.exec(text) : null;
  const ms = match ? Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])) : Number.NaN;
  if (!match || Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== text) {
    throw errors.invalidArgument(
      `${filter.at(key)}: expected a date as YYYY-MM-DD, got ${JSON.stringify(filter.raw(key) ?? null)}`,
    );
  }
  return ms;
}

interface Query {
  start: number;
  end: number;
  interval: (typeof INTERVALS)[number];
  scopeKey: string;
  scale: number;
}

function readQuery(ctx: RequestContext, body: In): Query {
  const filter = body.optObject('filter');
  if (!filter) throw errors.invalidArgument('filter: expected an object with startDate and endDate');
  const projectId = filter.optInt('projectId', { min: 0 });
  if (projectId !== undefined && projectId !== 0 && projectId !== ctx.state.projectId) {
    throw errors.permissionDenied(`the token is not valid for project ${projectId}`);
  }
  filter.optInt('ecosystemId', { min: 0 });
  const start = readDate(filter, 'startDate');
  const end = readDate(filter, 'endDate');
  if (end < start) throw errors.invalidArgument(`filter.endDate: ${filter.raw('endDate')} is before filter.startDate`);
  if ((end - start) / DAY_MS + 1 > MAX_DAYS)
    throw errors.invalidArgument(`filter.endDate: at most ${MAX_DAYS} days per query`);
  const intervalRaw = filter.raw('dateInterval');
  const interval =
    INTERVALS[intervalRaw === undefined ? 0 : checkEnum(intervalRaw, filter.at('dateInterval'), INTERVALS)] ?? 'DAY';
  const collections = [...new Set(filter.optAddressList('collections') ?? [])].sort();
  const tokenId = filter.optUint('tokenId');
  const scale = tokenId !== undefined ? 0.03 : collections.length > 0 ? Math.min(1, 0.35 * collections.length) : 1;
  return { start, end, interval, scopeKey: `${collections.join(',')}:${tokenId ?? ''}`, scale };
}

function daily(ctx: RequestContext, q: Query, day: number): { wallets: number; rate: number } {
  const prng = new Prng(`floorwatch-devnet:${ctx.state.dataset.seed}:analytics:${q.scopeKey}:${day}`);
  const dayNumber = Math.floor(day / DAY_MS);
  const weekday = 1 + 0.25 * Math.sin((2 * Math.PI * ((dayNumber + 3) % 7)) / 7);
  const trend = 1 + 0.3 * Math.sin((2 * Math.PI * dayNumber) / 90);
  const wallets = Math.max(0, Math.round(180 * q.scale * weekday * trend * (0.8 + 0.4 * prng.next())));
  const rate = Math.min(0.6, Math.max(0.01, 0.12 * weekday * (0.7 + 0.6 * prng.next())));
  return { wallets, rate: Math.round(rate * 10_000) / 10_000 };
}

function bucketStart(day: number, interval: Query['interval']): number {
  if (interval === 'DAY') return day;
  const date = new Date(day);
  if (interval === 'MONTH') return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
  return day - ((date.getUTCDay() + 6) % 7) * DAY_MS;
}

/** Deterministic daily series from the seed, summed (wallets) or averaged (rates) per interval. */
function series(ctx: RequestContext, body: In, metric: 'wallets' | 'rate'): Json[] {
  const q = readQuery(ctx, body);
  const buckets = new Map<number, { sum: number; days: number }>();
  for (let day = q.start; day <= q.end; day += DAY_MS) {
    const key = bucketStart(day, q.interval);
    const bucket = buckets.get(key) ?? { sum: 0, days: 0 };
    bucket.sum += daily(ctx, q, day)[metric];
    bucket.days++;
    buckets.set(key, bucket);
  }
  return [...buckets].map(([key, { sum, days }]) => ({
    value: metric === 'wallets' ? sum : Math.round((sum / days) * 10_000) / 10_000,
    label: new Date(key).toISOString().slice(0, 10),
  }));
}

const walletsTxnSentTotal: UnaryOperation = {
  kind: 'unary',
  service: 'Analytics',
  method: 'WalletsTxnSentTotal',
  base: 'api',
  credential: 'bearer',
  handle: (ctx, body) => ({ walletStats: series(ctx, body, 'wallets') }),
};

const dailyWalletTxnConversionRate: UnaryOperation = {
  kind: 'unary',
  service: 'Analytics',
  method: 'DailyWalletTxnConversionRate',
  base: 'api',
  credential: 'bearer',
  handle: (ctx, body) => ({ marketStats: series(ctx, body, 'rate') }),
};

export const analyticsOperations = [walletsTxnSentTotal, dailyWalletTxnConversionRate];
