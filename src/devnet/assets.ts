import type { IncomingMessage, ServerResponse } from 'node:http';
import { HOSTILE_IMAGES } from './hostile.ts';
import { sendText } from './http.ts';
import type { DevnetState } from './state.ts';
import { logoSvg, tokenSvg } from './svg.ts';

const ASSET = /^\/assets\/([^/]+)\/(0x[0-9a-fA-F]{40})\/([^/]+)\.svg$/;
const HOSTILE_ASSET = /^\/assets\/hostile\/([a-z-]+)\.svg$/;

/**
 * Serves token images and collection logos: `GET /assets/{network}/{collection}/{tokenId|logo}.svg`,
 * and the hostile images: `GET /assets/hostile/{name}.svg`.
 */
export function serveAsset(state: DevnetState, req: IncomingMessage, res: ServerResponse, path: string): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendText(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n', { allow: 'GET, HEAD' });
    return;
  }
  const match = ASSET.exec(path);
  const network = match ? state.network(match[1] ?? '') : undefined;
  const collection = network && match ? network.byAddress.get((match[2] ?? '').toLowerCase()) : undefined;
  const name = match?.[3] ?? '';
  const hostile = HOSTILE_ASSET.exec(path)?.[1];
  let svg: string | undefined =
    hostile && Object.hasOwn(HOSTILE_IMAGES, hostile) ? HOSTILE_IMAGES[hostile]?.() : undefined;
  if (collection && name === 'logo') svg = logoSvg(collection);
  else if (collection) {
    const index = collection.indexOf(name);
    if (index !== undefined) svg = tokenSvg(collection, index);
  }
  if (svg === undefined) {
    sendText(res, 404, 'text/plain; charset=utf-8', 'no such image\n');
    return;
  }
  const headers = { 'cache-control': 'public, max-age=86400' };
  if (req.method === 'HEAD') {
    res.writeHead(200, { 'content-type': 'image/svg+xml', 'content-length': Buffer.byteLength(svg), ...headers });
    res.end();
    return;
  }
  sendText(res, 200, 'image/svg+xml', svg, headers);
}
