export { PlatformClient, type PlatformClientOptions } from './client.ts';
export * from './errors.ts';
export { type Network, NetworkDirectory, WELL_KNOWN_NETWORKS } from './networks.ts';
export { MAX_DECIMALS, MAX_USD_PRICE, UINT256_MAX } from './records/fields.ts';
export {
  DEFAULT_DROP_REPORT_MS,
  type DroppedRecord,
  type DroppedRecordsSnapshot,
  RecordDrops,
} from './records/read.ts';
export type { PlatformEndpoints } from './services/context.ts';
export {
  DEFAULT_BAD_LINE_REPORT_MS,
  DEFAULT_HEARTBEAT_TIMEOUT_MS,
  DEFAULT_MAX_LINE_BYTES,
  DEFAULT_RECONNECT,
  type StreamOptions,
  type StreamState,
} from './stream.ts';
export {
  type BodyLimits,
  type CallOptions,
  type CallReport,
  DEFAULT_LIMITS,
  DEFAULT_RETRY,
  DEFAULT_TIMEOUTS,
} from './transport.ts';
export type * from './types.ts';
