import type { IncomingMessage, ServerResponse } from 'node:http';
import { type ActivitySpec, parseActivity } from './activity.ts';
import { errors } from './errors.ts';
import { type FaultRule, parseFaultSpec } from './faults.ts';
import { parseJson, parseJsonObject, readBody, sendJson } from './http.ts';
import type { MineResult, ReorgResult } from './miner.ts';
import type { ActivityState, DevnetInfo } from './types.ts';
import { In } from './validate.ts';

/** What the control routes act on. */
export interface ControlApi {
  info(): DevnetInfo;
  mine(network: string | undefined, activity: readonly ActivitySpec[]): MineResult;
  reorg(network: string | undefined, depth: number): ReorgResult;
  setFaults(rules: FaultRule[]): void;
  clearFaults(): void;
  faults(): FaultRule[];
  /** Stops the background blocks; blocks mined on request go on. */
  pause(): ActivityState;
  /** Starts the background blocks again, every `blockIntervalMs` (default: the interval set at start). */
  resume(blockIntervalMs: number | undefined): ActivityState;
}

const ROUTES: Readonly<Record<string, readonly string[]>> = {
  '/devnet/info': ['GET'],
  '/devnet/mine': ['POST'],
  '/devnet/reorg': ['POST'],
  '/devnet/faults': ['GET', 'POST', 'DELETE'],
  '/devnet/pause': ['POST'],
  '/devnet/resume': ['POST'],
};

async function jsonBody(req: IncomingMessage): Promise<In> {
  const text = await readBody(req);
  return new In(text.trim() === '' ? {} : parseJsonObject(text));
}

function networkOf(body: In): string | undefined {
  const raw = body.raw('network');
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' && typeof raw !== 'number')
    throw errors.invalidArgument('network: expected a network name or chain id');
  return String(raw);
}

/**
 * The control API for tests and demos, on the same server:
 * `GET /devnet/info`, `POST /devnet/mine`, `POST /devnet/reorg`, `GET|POST|DELETE /devnet/faults`,
 * `POST /devnet/pause` and `POST /devnet/resume` (the background blocks of random activity).
 */
export function controlRoutes(
  api: ControlApi,
): (req: IncomingMessage, res: ServerResponse, path: string) => Promise<void> {
  return async (req, res, path) => {
    const normalized = path.replace(/\/+$/, '');
    const methods = ROUTES[normalized];
    if (!methods) throw errors.badRoute(path);
    const method = req.method ?? '';
    if (!methods.includes(method)) throw errors.badMethod(method, methods.join(', '));
    switch (`${method} ${normalized}`) {
      case 'GET /devnet/info':
        sendJson(res, 200, api.info());
        return;
      case 'POST /devnet/mine': {
        const body = await jsonBody(req);
        const activity = (body.optList('activity') ?? []).map((item) => parseActivity(item.value, item.path));
        sendJson(res, 200, api.mine(networkOf(body), activity));
        return;
      }
      case 'POST /devnet/reorg': {
        const body = await jsonBody(req);
        sendJson(res, 200, api.reorg(networkOf(body), body.int('depth', { min: 1 })));
        return;
      }
      case 'GET /devnet/faults':
        sendJson(res, 200, { faults: api.faults() });
        return;
      case 'POST /devnet/faults': {
        const text = await readBody(req);
        const value = text.trim() === '' ? {} : parseJson(text);
        api.setFaults(parseFaultSpec(value));
        sendJson(res, 200, { faults: api.faults() });
        return;
      }
      case 'POST /devnet/pause':
        await readBody(req);
        sendJson(res, 200, api.pause());
        return;
      case 'POST /devnet/resume': {
        const body = await jsonBody(req);
        sendJson(res, 200, api.resume(body.optInt('blockIntervalMs', { min: 1, max: 3_600_000 })));
        return;
      }
      default:
        api.clearFaults();
        sendJson(res, 200, { faults: [] });
    }
  };
}
