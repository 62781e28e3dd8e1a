import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { JournalStats } from '../core/deliveries.ts';
import type { JournalBacklog, StreamHealth } from '../core/status.ts';

/** The alert path's counters that are metrics (its status has them all). */
export type PipelineStage = 'logs' | 'events' | 'matched' | 'deliveries' | 'reorged' | 'relists' | 'dropped';

/** One attempt of a platform call, as the client reports it (PlatformClient's CallReport). */
export interface PlatformCallReport {
  operation: string;
  /** HTTP status, or the error class name when there was no answer. */
  outcome: number | string;
  durationMs: number;
}

/** Where the scrape-time figures come from; each is read when `/metrics` is scraped. */
export interface MetricSources {
  streams: () => readonly StreamHealth[];
  counters: () => Readonly<Record<PipelineStage, number>>;
  queueDepth: () => ReadonlyMap<string, number>;
  journal: () => Promise<Readonly<JournalStats>>;
  /** Alerts waiting for the journal and its write failure (the alert path's status). */
  backlog: () => JournalBacklog;
  /** True for a command name the registry knows; other names are counted as `unknown`. */
  isCommand: (name: string) => boolean;
  /** Platform records dropped at the client's door so far, by operation (PlatformClient.droppedRecords). */
  droppedRecords?: () => ReadonlyMap<string, number>;
}

export type DeliveryOutcome = 'sent' | 'retried' | 'failed' | 'edited';

const PIPELINE_STAGES: ReadonlyArray<{ key: PipelineStage; help: string }> = [
  { key: 'logs', help: 'Event logs received from the indexer streams.' },
  { key: 'events', help: 'Chain events classified from those logs.' },
  { key: 'matched', help: 'Events that matched at least one watch rule.' },
  { key: 'deliveries', help: 'Deliveries recorded in the journal (one per matched destination).' },
  { key: 'reorged', help: 'Receipts reporting a reorganised transaction.' },
  { key: 'relists', help: 'Identical relists seen (left out for rules that do not show them).' },
  {
    key: 'dropped',
    help: 'Deliveries dropped unrecorded: the journal could not be written and the alerts kept in memory were at their limit.',
  },
];

const JOURNAL_STATES = ['pending', 'sending', 'sent', 'failed', 'dropped'] as const;

/**
 * The bot's Prometheus metrics, in a registry of their own (with the default process metrics).
 * Event-driven figures are counted as they happen (`command`, `platformCall`, `delivery`); the rest
 * is read from {@link MetricSources} at scrape time. Labels carry names, never user text or secrets.
 *
 * @example
 * const metrics = new BotMetrics();
 * engine.onOutcome((name, outcome) => metrics.command(name, outcome));
 * metrics.watch({ streams: () => pipeline.health(), ... });
 * const text = await metrics.registry.metrics();
 */
export class BotMetrics {
  readonly registry = new Registry();
  readonly #commands: Counter<'command' | 'outcome'>;
  readonly #calls: Histogram<'operation' | 'status'>;
  readonly #deliveries: Counter<'platform' | 'outcome'>;
  #sources: MetricSources | undefined;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.#commands = new Counter({
      name: 'floorwatch_commands_total',
      help: 'Commands run, by command and outcome.',
      labelNames: ['command', 'outcome'],
      registers,
    });
    this.#calls = new Histogram({
      name: 'floorwatch_platform_call_duration_seconds',
      help: 'Platform RPC attempts by operation and status (HTTP status or error class), with their latency.',
      labelNames: ['operation', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.#deliveries = new Counter({
      name: 'floorwatch_alert_deliveries_total',
      help: 'Alert deliveries by chat platform and outcome (sent, retried, failed, edited).',
      labelNames: ['platform', 'outcome'],
      registers,
    });

    const sources = () => this.#sources;
    new Gauge({
      name: 'floorwatch_stream_connected',
      help: 'Alert stream state per network and stream (events, receipts): 1 connected, 0 not.',
      labelNames: ['network', 'stream'],
      registers,
      collect() {
        this.reset();
        for (const health of sources()?.streams() ?? []) {
          this.set({ network: health.network, stream: 'events' }, health.events === 'connected' ? 1 : 0);
          this.set({ network: health.network, stream: 'receipts' }, health.receipts === 'connected' ? 1 : 0);
        }
      },
    });
    const reconnectsSeen = new Map<string, number>();
    new Counter({
      name: 'floorwatch_stream_reconnects_total',
      help: 'Alert stream reconnects per network.',
      labelNames: ['network'],
      registers,
      collect() {
        for (const health of sources()?.streams() ?? []) {
          const delta = health.reconnects - (reconnectsSeen.get(health.network) ?? 0);
          this.inc({ network: health.network }, Math.max(0, delta));
          reconnectsSeen.set(health.network, Math.max(health.reconnects, reconnectsSeen.get(health.network) ?? 0));
        }
      },
    });
    const droppedSeen = new Map<string, number>();
    new Counter({
      name: 'floorwatch_platform_records_dropped_total',
      help: 'Platform records dropped because they failed their checks (a bad address, amount, decimals or price; a bad stream line), by operation.',
      labelNames: ['operation'],
      registers,
      collect() {
        for (const [operation, dropped] of sources()?.droppedRecords?.() ?? []) {
          const delta = dropped - (droppedSeen.get(operation) ?? 0);
          if (delta > 0) this.inc({ operation }, delta);
          droppedSeen.set(operation, Math.max(dropped, droppedSeen.get(operation) ?? 0));
        }
      },
    });
    for (const stage of PIPELINE_STAGES) {
      let seen = 0;
      new Counter({
        name: `floorwatch_pipeline_${stage.key}_total`,
        help: stage.help,
        registers,
        collect() {
          const now = sources()?.counters()[stage.key] ?? seen;
          if (now > seen) this.inc(now - seen);
          seen = Math.max(seen, now);
        },
      });
    }
    new Gauge({
      name: 'floorwatch_delivery_queue_depth',
      help: 'Deliveries and edits waiting to be sent, per chat platform.',
      labelNames: ['platform'],
      registers,
      collect() {
        this.reset();
        for (const [platform, depth] of sources()?.queueDepth() ?? []) this.set({ platform }, depth);
      },
    });
    new Gauge({
      name: 'floorwatch_journal_records',
      help: 'Delivery records held by the journal, by state.',
      labelNames: ['state'],
      registers,
      async collect() {
        const stats = await sources()?.journal();
        if (!stats) return;
        for (const state of JOURNAL_STATES) this.set({ state }, stats[state]);
      },
    });
    new Gauge({
      name: 'floorwatch_journal_writable',
      help: 'Whether the delivery journal takes writes: 0 from a failed write (disk full) until one succeeds again.',
      registers,
      collect() {
        const backlog = sources()?.backlog();
        if (backlog) this.set(backlog.failure ? 0 : 1);
      },
    });
    new Gauge({
      name: 'floorwatch_journal_retry_queue_depth',
      help: 'Deliveries kept in memory because the journal could not record them; written again with back-off.',
      registers,
      collect() {
        const backlog = sources()?.backlog();
        if (backlog) this.set(backlog.queued);
      },
    });
    new Gauge({
      name: 'floorwatch_journal_bytes',
      help: 'Size of the delivery journal file in bytes.',
      registers,
      async collect() {
        const stats = await sources()?.journal();
        if (stats) this.set(stats.bytes);
      },
    });
  }

  /** Connects the scrape-time sources (once the components exist). */
  watch(sources: MetricSources): void {
    this.#sources = sources;
  }

  /** Counts a command run; `outcome` is the engine's word for how it ended (CommandEngine.onOutcome). */
  command(name: string, outcome: string): void {
    const known = this.#sources?.isCommand(name) ?? false;
    this.#commands.inc({ command: known ? name : 'unknown', outcome });
  }

  platformCall(report: PlatformCallReport): void {
    this.#calls.observe({ operation: report.operation, status: String(report.outcome) }, report.durationMs / 1000);
  }

  delivery(outcome: DeliveryOutcome, platform: string, count: number): void {
    this.#deliveries.inc({ platform, outcome }, count);
  }
}
