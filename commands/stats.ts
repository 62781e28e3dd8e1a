import { defineCommand } from '../src/bot/command.ts';
import { UserError } from '../src/bot/errors.ts';
import type { Reply } from '../src/core/reply.ts';
import { PlatformError } from '../src/platform/errors.ts';
import type { ChartPoint } from '../src/platform/types.ts';

const BARS = '▁▂▃▄▅▆▇█';

/** A one-line picture of a series. */
export function sparkline(values: readonly number[]): string {
  if (values.length === 0) return '';
  const min = Math.min(...values);
  const max = Math.max(...values);
  return values.map((v) => BARS[max === min ? 3 : Math.round(((v - min) / (max - min)) * 7)] ?? '').join('');
}

function isoDay(date: Date): string {
  return date.toISOString().slice(0, 10);
}

function summary(points: readonly ChartPoint[], format: (v: number) => string): string {
  if (points.length === 0) return 'no data for these days';
  const values = points.map((p) => p.value);
  const last = points[points.length - 1];
  const total = values.reduce((a, b) => a + b, 0);
  return `${sparkline(values)}\nlatest ${format(last?.value ?? 0)} (${last?.label ?? ''}) · average ${format(total / values.length)}`;
}

export default defineCommand({
  name: 'stats',
  description: "The project's wallet activity and conversion, day by day",
  example: '/stats 14',
  options: [{ name: 'days', type: 'integer', description: 'How many days back (1-90)', min: 1, max: 90 }],
  async run(ctx, { days = 7 }) {
    if (ctx.settings.projectId === undefined) {
      throw new UserError('not_configured', { what: 'No project is configured: set FLOORWATCH_PROJECT_ID.' });
    }
    const end = ctx.now();
    const start = new Date(end.getTime() - (days - 1) * 86_400_000);
    const filter = { projectId: ctx.settings.projectId, startDate: isoDay(start), endDate: isoDay(end) };
    const [wallets, conversion] = await Promise.allSettled([
      ctx.platform.analytics.walletsTxnSentTotal(filter),
      ctx.platform.analytics.dailyWalletTxnConversionRate(filter),
    ]);
    if (wallets.status === 'rejected' && conversion.status === 'rejected') throw wallets.reason;
    const failed = (r: PromiseSettledResult<unknown>) =>
      r.status === 'rejected'
        ? `unavailable: ${r.reason instanceof PlatformError ? r.reason.message.split(': ').slice(1).join(': ') : 'error'}`
        : '';
    const reply: Reply = {
      title: `Project activity, ${filter.startDate} to ${filter.endDate}`,
      tone: 'info',
      fields: [
        {
          name: 'Wallets that sent transactions',
          value:
            wallets.status === 'fulfilled'
              ? summary(wallets.value, (v) => Math.round(v).toLocaleString('en-US'))
              : failed(wallets),
        },
        {
          name: 'Daily conversion rate',
          value:
            conversion.status === 'fulfilled'
              ? summary(conversion.value, (v) => `${(v <= 1 ? v * 100 : v).toFixed(1)}%`)
              : failed(conversion),
        },
      ],
    };
    return reply;
  },
});
