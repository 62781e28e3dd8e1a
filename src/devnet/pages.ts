import type { IncomingMessage, ServerResponse } from 'node:http';
import { formatUnits } from './hex.ts';
import { sendText } from './http.ts';
import type { DevnetState, NetworkState } from './state.ts';

const TOKEN_PAGE = /^\/market\/([^/]+)\/(0x[0-9a-fA-F]{40})\/(\d{1,78})$/;
const TXN_PAGE = /^\/explorer\/([^/]+)\/tx\/(0x[0-9a-fA-F]{64})$/;

/** The devnet's web pages, where alerts and answers link: its marketplace's token pages and its explorer's transactions. */
export const PAGE_PREFIXES = ['/market/', '/explorer/'] as const;

/**
 * Serves `GET /market/{network}/{collection}/{tokenId}` (the token, its image and its active listings)
 * and `GET /explorer/{network}/tx/{txnHash}` (the transaction's block and logs), as small HTML pages,
 * so that every link the bot posts for the local platform opens something real.
 */
export function servePage(state: DevnetState, req: IncomingMessage, res: ServerResponse, path: string): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendText(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n', { allow: 'GET, HEAD' });
    return;
  }
  const html = tokenPage(state, path) ?? transactionPage(state, path);
  if (html === undefined) {
    sendText(res, 404, 'text/plain; charset=utf-8', 'no such page\n');
    return;
  }
  sendText(res, 200, 'text/html; charset=utf-8', req.method === 'HEAD' ? '' : html);
}

function tokenPage(state: DevnetState, path: string): string | undefined {
  const match = TOKEN_PAGE.exec(path);
  const network = match ? state.network(match[1] ?? '') : undefined;
  const collection = network && match ? network.byAddress.get((match[2] ?? '').toLowerCase()) : undefined;
  const tokenId = match?.[3] ?? '';
  const index = collection?.indexOf(tokenId);
  if (!network || !collection || index === undefined) return undefined;
  const listings = network.book
    .side(collection.address, index, 'listing')
    .filter((o) => o.status === 'active')
    .slice(0, 10)
    .map(
      (o) =>
        `<li>${escapeHtml(formatUnits(o.price, o.currency.decimals))} ${escapeHtml(o.currency.symbol)} ($${o.priceUsd.toFixed(2)}) by <code>${o.maker}</code> (order ${escapeHtml(o.orderId)})</li>`,
    );
  const name = escapeHtml(collection.tokenName(index));
  return page(
    `${name} · ${escapeHtml(collection.name)}`,
    `<h1>${name}</h1>
<p>${escapeHtml(collection.name)} on ${escapeHtml(network.name)} · token ${escapeHtml(tokenId)} · contract <code>${collection.address}</code></p>
<img src="/assets/${encodeURIComponent(network.name)}/${collection.address}/${encodeURIComponent(tokenId)}.svg" width="256" height="256" alt="${name}">
<h2>Listings</h2>
${listings.length ? `<ul>${listings.join('\n')}</ul>` : '<p>Not listed.</p>'}`,
  );
}

function transactionPage(state: DevnetState, path: string): string | undefined {
  const match = TXN_PAGE.exec(path);
  const network = match ? state.network(match[1] ?? '') : undefined;
  const hash = (match?.[2] ?? '').toLowerCase();
  const txn = network ? findTransaction(network, hash) : undefined;
  if (!network || !txn) return undefined;
  const logs = txn.logs.map((log) => `<li>${escapeHtml(log.def.name)} on <code>${log.contractAddress}</code></li>`);
  return page(
    `Transaction ${hash.slice(0, 10)}…`,
    `<h1>Transaction</h1>
<p><code>${hash}</code></p>
<p>${escapeHtml(network.name)} · block ${txn.block.number} (${escapeHtml(txn.block.iso)})${txn.block.final ? ' · final' : ''} · from <code>${txn.from}</code></p>
<h2>Logs</h2>
<ul>${logs.join('\n')}</ul>`,
  );
}

function findTransaction(network: NetworkState, hash: string) {
  for (let i = network.chain.blocks.length - 1; i >= 0; i--) {
    const found = network.chain.blocks[i]?.txns.find((t) => t.hash.toLowerCase() === hash);
    if (found) return found;
  }
  return undefined;
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${title}</title></head>
<body style="font-family: sans-serif; max-width: 48rem; margin: 2rem auto">
${body}
<p><small>Floorwatch local platform</small></p>
</body></html>
`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
