/**
 * The verification page's listener: a small HTTP server of its own (FLOORWATCH_WEB_HOST and
 * FLOORWATCH_WEB_PORT), reached at FLOORWATCH_PUBLIC_URL (usually through a TLS proxy).
 *
 * - `GET  <prefix>/verify/<token>`            the page (plain HTML, escaped; 404/410 pages for bad links)
 * - `GET  <prefix>/verify/assets/verify.js|css`  its script and style
 * - `POST <prefix>/verify/<token>/challenge`  `{address, initData?}` -> `{ok, message}` or a refusal
 * - `POST <prefix>/verify/<token>/signature`  `{message, signature, initData?}` -> `{ok, text}` or a refusal
 *
 * A POST must come from the page itself: its `Origin` is the public origin (or, without one,
 * `Sec-Fetch-Site: same-origin`), it carries the link's page token in `X-Floorwatch-Page-Token`
 * (a custom header: a cross-site request would need a preflight, which is never answered), and its
 * body is JSON. The browser cookie that binds a link to the browser that used it first is
 * `HttpOnly; SameSite=Lax` (and `Secure` on https). Pages allow nothing but their own origin
 * (CSP `default-src 'self'`), are never framed (but by Telegram's web client, for Mini Apps) and
 * never cached or referred.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import * as v from 'valibot';
import { createLimitedServer, type ListenerLimits, listenOn } from '../core/http-listener.ts';
import { INVISIBLE } from '../core/reply.ts';
import { REFUSAL_TEXT } from './refusals.ts';
import { LINK_TOKEN, type PageCaller, publicPrefix, type WalletVerification } from './verification.ts';

/** What a client may hold of the page's listener: browsers send a request's head at once. */
export const PAGE_LISTENER_LIMITS: ListenerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 20_000,
  keepAliveTimeoutMs: 5_000,
  maxHeadersCount: 100,
  maxHeaderSize: 16 * 1024,
  maxConnections: 256,
};
/** Largest POST body read (a message, a signature and Telegram's data: a few kilobytes). */
export const MAX_BODY_BYTES = 32 * 1024;
export const BROWSER_COOKIE = 'fw_browser';
export const PAGE_TOKEN_HEADER = 'x-floorwatch-page-token';
/** Telegram's web client frames Mini Apps. */
const TELEGRAM_WEB = 'https://web.telegram.org';

const initData = v.exactOptional(v.pipe(v.string(), v.maxLength(8_192)));
const challengeBody = v.object({ address: v.pipe(v.string(), v.maxLength(200)), initData });
const signatureBody = v.object({
  message: v.pipe(v.string(), v.maxLength(4_000)),
  signature: v.pipe(v.string(), v.maxLength(10_000)),
  initData,
});

export interface PageServerOptions {
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  publicUrl: URL;
  verification: WalletVerification;
  logger: Logger;
}

export interface PageServer {
  address: { host: string; port: number };
  close(): Promise<void>;
}

/** The page's script and style, read once from src/roles/page (shipped beside the build, like the migrations). */
function loadAssets(): { script: string; style: string } {
  let directory = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(directory, 'src', 'roles', 'page');
    if (existsSync(join(directory, 'package.json')) && existsSync(join(candidate, 'verify.js'))) {
      return {
        script: readFileSync(join(candidate, 'verify.js'), 'utf8'),
        style: readFileSync(join(candidate, 'verify.css'), 'utf8'),
      };
    }
    const parent = dirname(directory);
    if (parent === directory) throw new Error('the verification page (src/roles/page) is missing');
    directory = parent;
  }
}

/** Text for HTML, attribute values included. */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** A community name as the page shows it: one line, no control or invisible characters, at most 100 characters. */
function shownName(name: string): string {
  const clean = name
    .replace(INVISIBLE, '')
    .replace(/[\s\p{Cc}]+/gu, ' ')
    .trim();
  const chars = [...clean];
  return chars.length > 100 ? `${chars.slice(0, 100).join('')}…` : clean || 'this community';
}

/** Starts the page's listener. */
export async function startPageServer(options: PageServerOptions): Promise<PageServer> {
  const { verification, logger, publicUrl } = options;
  const assets = loadAssets();
  const prefix = `${publicPrefix(publicUrl)}/verify`;
  const secure = publicUrl.protocol === 'https:';
  const origin = publicUrl.origin;

  const securityHeaders = (miniApp: boolean): Record<string, string> => ({
    'content-security-policy': `default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors ${miniApp ? TELEGRAM_WEB : "'none'"}`,
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store',
    ...(miniApp ? {} : { 'x-frame-options': 'DENY' }),
  });

  const send = (
    res: ServerResponse,
    status: number,
    type: string,
    body: string,
    headers: Record<string, string> = {},
  ) => {
    res.writeHead(status, { 'content-type': type, ...securityHeaders(false), ...headers });
    res.end(body);
  };
  const json = (res: ServerResponse, status: number, body: unknown) =>
    send(res, status, 'application/json; charset=utf-8', JSON.stringify(body));

  const page = async (req: IncomingMessage, res: ServerResponse, token: string) => {
    const view = await verification.page(token);
    if (!view.ok) {
      const status = view.reason === 'link_unknown' ? 404 : 410;
      send(res, status, 'text/html; charset=utf-8', messagePage(view.text, prefix));
      return;
    }
    const headers: Record<string, string> = { ...securityHeaders(view.miniApp) };
    if (!cookieOf(req, BROWSER_COOKIE)) {
      headers['set-cookie'] =
        `${BROWSER_COOKIE}=${randomBytes(32).toString('base64url')}; Path=${prefix}; HttpOnly; SameSite=Lax; Max-Age=3600${secure ? '; Secure' : ''}`;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...headers });
    res.end(verifyPage({ communityName: view.communityName, pageToken: view.pageToken, prefix, token }));
  };

  /** Whether a POST comes from the page itself (see the module comment); says why not in the answer. */
  const fromPage = async (req: IncomingMessage, res: ServerResponse, token: string): Promise<boolean> => {
    const site = header(req, 'sec-fetch-site');
    const requestOrigin = header(req, 'origin');
    const sameSite = requestOrigin !== undefined ? requestOrigin === origin : site === 'same-origin';
    if (!sameSite || (site !== undefined && site !== 'same-origin')) {
      logger.info({ reason: 'cross_site' }, 'verification request refused');
      json(res, 403, {
        ok: false,
        reason: 'cross_site',
        text: 'This request did not come from the verification page.',
      });
      return false;
    }
    const type = (header(req, 'content-type') ?? '').split(';')[0]?.trim().toLowerCase();
    if (type !== 'application/json') {
      json(res, 415, { ok: false, reason: 'bad_request', text: 'The request must be JSON.' });
      return false;
    }
    const expected = await verification.pageTokenOf(token);
    const given = header(req, PAGE_TOKEN_HEADER) ?? '';
    if (expected === undefined) {
      json(res, 404, { ok: false, reason: 'link_unknown', text: REFUSAL_TEXT.link_unknown });
      return false;
    }
    const a = Buffer.from(given);
    const b = Buffer.from(expected);
    if (a.length !== b.length || !timingSafeEqual(a, b)) {
      logger.info({ reason: 'page_token' }, 'verification request refused');
      json(res, 403, {
        ok: false,
        reason: 'cross_site',
        text: 'This request did not come from the verification page.',
      });
      return false;
    }
    return true;
  };

  const action = async (req: IncomingMessage, res: ServerResponse, token: string, step: 'challenge' | 'signature') => {
    if (!(await fromPage(req, res, token))) return;
    const raw = await readBody(req, MAX_BODY_BYTES);
    if (raw === undefined) {
      json(res, 413, { ok: false, reason: 'bad_request', text: 'The request is too large.' });
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      json(res, 400, { ok: false, reason: 'bad_request', text: 'The request is not valid JSON.' });
      return;
    }
    const caller = (data: string | undefined): PageCaller => ({
      browser: cookieOf(req, BROWSER_COOKIE),
      initData: data,
    });
    if (step === 'challenge') {
      const parsed = v.safeParse(challengeBody, body);
      if (!parsed.success) {
        json(res, 400, { ok: false, reason: 'bad_request', text: 'The request lacks a wallet address.' });
        return;
      }
      const answer = await verification.pageChallenge(token, parsed.output.address, caller(parsed.output.initData));
      json(res, 200, answer.ok ? { ok: true, message: answer.message, text: 'Sign the message.' } : answer);
      return;
    }
    const parsed = v.safeParse(signatureBody, body);
    if (!parsed.success) {
      json(res, 400, { ok: false, reason: 'bad_request', text: 'The request lacks the message or the signature.' });
      return;
    }
    const { message, signature } = parsed.output;
    const outcome = await verification.pageSignature(token, message, signature, caller(parsed.output.initData));
    if (!outcome.ok) {
      json(res, 200, outcome);
      return;
    }
    const { wallet, moved } = outcome;
    const shortAddress = `${wallet.address.slice(0, 6)}…${wallet.address.slice(-4)}`;
    const text = `Wallet ${shortAddress} is verified. You can close this page.${
      moved ? ' It was linked to another account in this community; it is now linked to yours only.' : ''
    }`;
    json(res, 200, { ok: true, address: wallet.address, kind: wallet.kind, moved, text });
  };

  const routes = (req: IncomingMessage, res: ServerResponse): Promise<void> | undefined => {
    const path = new URL(req.url ?? '/', 'http://listener').pathname;
    if (!path.startsWith(`${prefix}/`)) return undefined;
    const rest = path.slice(prefix.length + 1).split('/');
    const [first, second] = rest;
    if (rest.length === 2 && first === 'assets' && (second === 'verify.js' || second === 'verify.css')) {
      if (req.method !== 'GET' && req.method !== 'HEAD') return methodNotAllowed(res, 'GET');
      const script = second === 'verify.js';
      send(
        res,
        200,
        script ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8',
        script ? assets.script : assets.style,
      );
      return Promise.resolve();
    }
    if (first === undefined || !LINK_TOKEN.test(first)) return undefined;
    if (rest.length === 1) {
      if (req.method !== 'GET' && req.method !== 'HEAD') return methodNotAllowed(res, 'GET');
      return page(req, res, first);
    }
    if (rest.length === 2 && (second === 'challenge' || second === 'signature')) {
      if (req.method !== 'POST') return methodNotAllowed(res, 'POST');
      return action(req, res, first, second);
    }
    return undefined;
  };

  const methodNotAllowed = (res: ServerResponse, allow: string): Promise<void> => {
    send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n', { allow });
    return Promise.resolve();
  };

  const server: Server = createLimitedServer(PAGE_LISTENER_LIMITS, (req, res) => {
    const handled = routes(req, res);
    if (!handled) {
      send(res, 404, 'text/html; charset=utf-8', messagePage('There is nothing here.', prefix));
      return;
    }
    handled.catch((error: unknown) => {
      logger.error({ err: error }, 'verification page request failed');
      if (!res.headersSent) json(res, 500, { ok: false, reason: 'unavailable', text: REFUSAL_TEXT.unavailable });
      else res.destroy();
    });
  });
  const listener = await listenOn(server, options.host, options.port);
  logger.info({ host: options.host, port: listener.address.port }, 'verification page listening');
  return listener;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' ? value : undefined;
}

function cookieOf(req: IncomingMessage, name: string): string | undefined {
  const cookies = header(req, 'cookie');
  if (!cookies) return undefined;
  for (const part of cookies.split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) {
      const value = part.slice(at + 1).trim();
      return /^[A-Za-z0-9_-]{43}$/.test(value) ? value : undefined;
    }
  }
  return undefined;
}

/** A request's body, or undefined once it grows past `limit`. */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  if (Number(req.headers['content-length'] ?? 0) > limit) {
    req.resume();
    return Promise.resolve(undefined);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const onData = (chunk: Buffer) => {
      length += chunk.length;
      if (length <= limit) {
        chunks.push(chunk);
        return;
      }
      req.off('data', onData);
      req.resume();
      resolve(undefined);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
    req.once('close', () => resolve(undefined));
  });
}

/** The page of a link: its community's name escaped, its addresses and per-link token in data attributes. */
export function verifyPage(fields: {
  communityName: string;
  pageToken: string;
  prefix: string;
  token: string;
}): string {
  const name = escapeHtml(shownName(fields.communityName));
  const base = `${fields.prefix}/${fields.token}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Verify a wallet</title>
<link rel="stylesheet" href="${escapeHtml(fields.prefix)}/assets/verify.css">
</head>
<body data-challenge="${escapeHtml(`${base}/challenge`)}" data-signature="${escapeHtml(`${base}/signature`)}" data-page-token="${escapeHtml(fields.pageToken)}">
<main>
<h1>Verify a wallet for <span id="community">${name}</span></h1>
<p>Sign a message with your wallet to prove it is yours. Signing is free and allows no transaction. Your wallet is never shown to anyone else.</p>
<section>
<h2>With a wallet in this browser</h2>
<p id="wallet-status">Looking for wallets…</p>
<div id="wallet-list"></div>
</section>
<section>
<h2>Without a browser wallet</h2>
<label for="address">Your wallet address</label>
<input id="address" autocomplete="off" spellcheck="false" placeholder="0x…">
<button id="get-message" type="button">Get the message to sign</button>
<div id="paste-steps" hidden>
<label for="message">Sign this message exactly as it is (personal_sign), with any wallet</label>
<textarea id="message" rows="11" readonly></textarea>
<button id="copy" type="button">Copy the message</button>
<label for="signature">Paste the signature</label>
<textarea id="signature" rows="3" spellcheck="false"></textarea>
<button id="send-signature" type="button">Verify</button>
</div>
</section>
<p id="result" role="status" aria-live="polite"></p>
<p class="note">This link works once, for you only, and expires after 30 minutes.</p>
</main>
<script src="${escapeHtml(fields.prefix)}/assets/verify.js"></script>
</body>
</html>
`;
}

/** A page that only says something (a link that does not work, a wrong address). */
function messagePage(text: string, prefix: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Verify a wallet</title>
<link rel="stylesheet" href="${escapeHtml(prefix)}/assets/verify.css">
</head>
<body>
<main>
<h1>Verify a wallet</h1>
<p id="result" data-tone="error">${escapeHtml(text)}</p>
</main>
</body>
</html>
`;
}
