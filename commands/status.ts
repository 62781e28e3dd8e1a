import { defineCommand } from '../src/bot/command.ts';
import type { Rich } from '../src/core/reply.ts';
import { completenessLines } from '../src/core/status.ts';
import { PlatformApiError, PlatformError } from '../src/platform/errors.ts';

const PROBE_TIMEOUT_MS = 4_000;
const ZERO = '0x0000000000000000000000000000000000000000';

interface Probe {
  service: string;
  call: () => Promise<unknown>;
}

function uptime(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  return hours < 48 ? `${hours} h ${minutes % 60} min` : `${Math.floor(hours / 24)} days`;
}

/**
 * Reachability of each service: any answer that is not a server failure proves the service is up,
 * so a probe that the platform rejects for its arguments still counts as reachable.
 */
async function probe(p: Probe): Promise<Rich> {
  const started = performance.now();
  try {
    await p.call();
    return `✅ ${p.service}: up (${Math.round(performance.now() - started)} ms)`;
  } catch (error) {
    const ms = Math.round(performance.now() - started);
    if (error instanceof PlatformApiError && error.status < 500 && !error.isRateLimited) {
      if (error.isUnauthorized || error.isPermissionDenied)
        return `⚠️ ${p.service}: up, but it refused the bot's credentials (${error.errorName})`;
      return `✅ ${p.service}: up (${ms} ms)`;
    }
    const reason = error instanceof PlatformError ? error.name.replace('Platform', '').replace('Error', '') : 'failed';
    return `❌ ${p.service}: ${error instanceof PlatformApiError ? `HTTP ${error.status}` : reason.toLowerCase()}`;
  }
}

export default defineCommand({
  name: 'status',
  description: 'Platform reachability, version and uptime',
  options: [],
  async run(ctx) {
    const network = ctx.network;
    const options = { timeoutMs: PROBE_TIMEOUT_MS };
    const projectId = ctx.settings.projectId ?? 0;
    const today = ctx.now().toISOString().slice(0, 10);
    const probes: Probe[] = [
      {
        service: 'Metadata',
        call: () =>
          ctx.platform.metadata.searchMetadata({ filter: 'status', network, excludeTokenMetadata: true }, options),
      },
      { service: 'Marketplace', call: () => ctx.platform.marketplace.getOrders({ network, input: [] }, options) },
      {
        service: 'Indexer',
        call: () =>
          ctx.platform.indexer.getTokenBalancesByContract(
            { network, filter: { contractAddresses: [ZERO] }, omitMetadata: true, page: { pageSize: 1 } },
            options,
          ),
      },
      {
        service: 'Builder',
        call: () => ctx.platform.builder.listContractSources({ projectId, page: { pageSize: 1 } }, options),
      },
      {
        service: 'Relayer',
        call: () => ctx.platform.relayer.listGasSponsors({ network, projectId, page: { pageSize: 1 } }, options),
      },
      {
        service: 'Analytics',
        call: () =>
          ctx.platform.analytics.walletsTxnSentTotal({ projectId, startDate: today, endDate: today }, options),
      },
    ];
    const lines = await Promise.all(probes.map(probe));
    const dropped = ctx.platform.droppedRecords.snapshot();
    if (dropped.total > 0) {
      // Operation names only: the records' own text is the platform's, and stays in the log.
      const worst = [...dropped.byOperation]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 3)
        .map(([operation, count]) => `${operation} ${count}`);
      lines.push(
        `⚠️ Platform records dropped (values that failed their checks): ${dropped.total} since start (${worst.join(', ')}${dropped.byOperation.size > 3 ? ', …' : ''}); details in the log`,
      );
    }
    const alerts = await ctx.bot.alerts?.();
    if (alerts) {
      lines.push('Alert streams:');
      if (alerts.streams.length === 0)
        lines.push('  none open here (no watch rules, no marketplace contracts, or another process ingests)');
      for (const s of alerts.streams) {
        const ago = s.lastEventAt
          ? `${Math.round((ctx.now().getTime() - Date.parse(s.lastEventAt)) / 1000)} s ago`
          : 'none yet';
        lines.push(
          `  ${s.events === 'connected' ? '✅' : '⚠️'} ${s.network}: events ${s.events}, receipts ${s.receipts}, ${s.contracts} contract${s.contracts === 1 ? '' : 's'}, last event ${ago}${s.lastBlock === undefined ? '' : ` (block ${s.lastBlock})`}, ${s.reconnects} reconnect${s.reconnects === 1 ? '' : 's'}`,
        );
        for (const gap of s.gaps.slice(-3))
          lines.push(`    gap: blocks ${gap.fromBlock}-${gap.toBlock} not seen (${gap.at.slice(0, 19)}Z)`);
        if (s.events !== 'connected' && s.lastError) lines.push(`    last error: ${s.lastError.slice(0, 200)}`);
      }
      if (alerts.completeness) {
        // Missed: blocks beyond the backfill's limit, or lost while a stream was down with no backfill.
        lines.push(`Record of ${alerts.completeness.day} (UTC day):`);
        const networks = alerts.streams.map((s) => s.network);
        const figures = completenessLines(alerts.completeness.networks, networks);
        if (figures.length === 0) lines.push('  nothing counted yet');
        for (const line of figures) lines.push(`  ${line}`);
      }
      const { counters, backlog } = alerts;
      lines.push(
        `Alerts: ${counters.events} events, ${counters.deliveries} deliveries recorded, ${alerts.journal.pending} waiting, ${alerts.journal.failed} failed, ${counters.reorged} reorgs${counters.dropped ? `, ${counters.dropped} dropped` : ''}`,
      );
      const failure = backlog?.failure;
      if (failure) {
        lines.push(
          `❌ Delivery journal: failing to write since ${failure.since.slice(0, 19)}Z (${failure.code ?? failure.message.slice(0, 100)})${failure.broken ? ', restart needed' : ''}: ${backlog.queued} alerts kept in memory, ${counters.dropped} dropped`,
        );
      } else if (backlog?.queued) {
        lines.push(`⚠️ Delivery journal: writing ${backlog.queued} alerts kept in memory`);
      }
    }
    return {
      title: 'Floorwatch status',
      tone: 'info',
      lines,
      fields: [
        { name: 'Version', value: ctx.settings.version, inline: true },
        { name: 'Uptime', value: uptime(ctx.now().getTime() - ctx.bot.startedAt.getTime()), inline: true },
        {
          name: 'Networks',
          value: ctx.platform.networks.all.map((n) => `${n.name} (${n.chainId})`).join(', '),
          inline: true,
        },
      ],
      footer: `Checked on ${network}`,
    };
  },
});
