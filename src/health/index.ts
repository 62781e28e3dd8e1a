import type { Logger } from 'pino';
import { type HealthServer, startHealthServer } from './http.ts';
import type { BotMetrics, MetricSources } from './metrics.ts';
import { checkReadiness, type ReadinessSources } from './readiness.ts';

/** What the health listener reads, when asked: plain data from the parts that own it. */
export type HealthSources = MetricSources & Omit<ReadinessSources, 'journal'>;

/**
 * The operator's listener (FLOORWATCH_HTTP_PORT): `/healthz`, `/readyz` from the readiness checks,
 * `/metrics` from the metrics, both reading `sources` when asked.
 */
export function startHealth(options: {
  host: string;
  port: number;
  metrics: BotMetrics;
  sources: HealthSources;
  logger: Logger;
}): Promise<HealthServer> {
  const { metrics, sources } = options;
  metrics.watch(sources);
  return startHealthServer({
    host: options.host,
    port: options.port,
    registry: metrics.registry,
    logger: options.logger,
    readiness: () => checkReadiness({ ...sources, journal: sources.backlog }),
  });
}
