/**
 * Wallet verification: one-time links to the page the bot serves, Sign-In with Ethereum messages
 * with single-use nonces, and the checks that turn a signature into a verified wallet. Both the
 * `/verify` command (through {@link WalletVerificationPort}) and the page's listener (roles/web.ts)
 * go through here; the store makes each step happen once (core/wallets.ts).
 *
 * Nothing personal is logged: no address, person, link, signature or Telegram data; only outcomes.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { isAddress } from 'viem';
import { opensInApp } from '../core/reply.ts';
import type {
  CommunityRef,
  Refused,
  VerificationOutcome,
  VerificationRefusal,
  VerifiedWallet,
  VerifyLink,
  WalletStore,
  WalletVerificationPort,
} from '../core/wallets.ts';
import { AttemptLimiter } from './attempts.ts';
import { refused } from './refusals.ts';
import {
  CHALLENGE_TTL_MS,
  type ChallengeSettings,
  checkMessage,
  issueChallenge,
  nonceOf,
  parseSignature,
  type SignatureChecker,
} from './siwe.ts';

/** How long a page link may be opened and asked for messages. */
export const LINK_TTL_MS = 30 * 60 * 1000;
/** Signatures one link may try. */
export const MAX_LINK_ATTEMPTS = 10;
/** Messages and signatures one person may ask for and try within {@link LIMIT_WINDOW_MS}. */
export const PERSON_ATTEMPTS = 20;
/** Failed signatures for one address within {@link LIMIT_WINDOW_MS}. */
export const ADDRESS_FAILURES = 5;
export const LIMIT_WINDOW_MS = 10 * 60 * 1000;
/** Links are forgotten a day after they expired. */
const LINK_KEEP_MS = 24 * 60 * 60 * 1000;

/** A link's bearer token as it appears in the URL: 32 random bytes, base64url. */
export const LINK_TOKEN = /^[A-Za-z0-9_-]{43}$/;

/** Who a Telegram Mini App's signed data names, or why it names nobody. */
export type MiniAppIdentity = (initData: string, now: Date) => { ok: true; person: string } | { ok: false };

export interface VerificationOptions {
  store: WalletStore;
  checker: SignatureChecker;
  logger: Logger;
  /** FLOORWATCH_PUBLIC_URL: the page's public address (undefined: no page, the chat's paste path only). */
  publicUrl: URL | undefined;
  /** The chain whose id the messages carry (and whose JSON-RPC checks contract wallets). */
  chainId: number;
  /** Checks Telegram Mini App data (with the bot's token); undefined without Telegram. */
  miniAppIdentity?: MiniAppIdentity;
  /** The command that signs a message with a local test wallet, when `address` is one (the local platform). */
  signHint?: (address: string, message: string) => string | undefined;
  /** The local platform's test wallets. */
  testWallets?: ReadonlyArray<{ index: number; kind: string; address: string }>;
  now?: () => Date;
}

/** What the page shows for a link, or why it shows none. */
export type PageView =
  | { ok: true; communityName: string; pageToken: string; miniApp: boolean; chainId: number }
  | Refused;

/** What came with a page request besides its body: the browser's cookie, Telegram's signed data. */
export interface PageCaller {
  browser: string | undefined;
  initData: string | undefined;
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** The public page's path prefix (FLOORWATCH_PUBLIC_URL's path, without a trailing slash). */
export function publicPrefix(publicUrl: URL): string {
  return publicUrl.pathname.replace(/\/+$/, '');
}

/** Wallet verification (see the module comment). */
export class WalletVerification implements WalletVerificationPort {
  readonly #options: VerificationOptions;
  readonly #store: WalletStore;
  readonly #now: () => Date;
  readonly #settings: ChallengeSettings;
  readonly #persons: AttemptLimiter;
  readonly #addresses: AttemptLimiter;
  #pruned = 0;

  constructor(options: VerificationOptions) {
    this.#options = options;
    this.#store = options.store;
    this.#now = options.now ?? (() => new Date());
    const url = options.publicUrl;
    this.#settings = url
      ? { domain: url.host, uri: `${url.origin}${publicPrefix(url)}/verify`, chainId: options.chainId }
      : { domain: 'localhost', uri: 'http://localhost/verify', chainId: options.chainId };
    const clock = () => this.#now().getTime();
    this.#persons = new AttemptLimiter({ max: PERSON_ATTEMPTS, windowMs: LIMIT_WINDOW_MS, now: clock });
    this.#addresses = new AttemptLimiter({ max: ADDRESS_FAILURES, windowMs: LIMIT_WINDOW_MS, now: clock });
  }

  get pageAvailable(): boolean {
    return this.#options.publicUrl !== undefined;
  }

  /** The message domain (the public host). */
  get domain(): string {
    return this.#settings.domain;
  }

  testWallets(): ReadonlyArray<{ index: number; kind: string; address: string }> {
    return this.#options.testWallets ?? [];
  }

  // ---- the chat side

  async issuePageLink(
    community: CommunityRef,
    person: string,
    options: { miniApp: boolean },
  ): Promise<{ url: string; miniApp: boolean }> {
    const url = this.#options.publicUrl;
    if (!url) throw new Error('FLOORWATCH_PUBLIC_URL is not set: there is no page to link to');
    const miniApp = options.miniApp && opensInApp(url.href);
    const token = randomBytes(32).toString('base64url');
    const now = this.#now();
    await this.#store.createLink({
      id: sha256(token),
      community: community.key,
      communityName: community.name,
      person,
      channel: 'page',
      miniApp,
      pageToken: randomBytes(24).toString('base64url'),
      createdAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + LINK_TTL_MS).toISOString(),
    });
    this.#prune(now);
    this.#options.logger.info({ miniApp }, 'verification link issued');
    return { url: `${url.origin}${publicPrefix(url)}/verify/${token}`, miniApp };
  }

  async issueChatMessage(
    community: CommunityRef,
    person: string,
    address: string,
  ): Promise<{ ok: true; message: string; expiresAt: string; signHint?: string } | Refused> {
    const trimmed = address.trim();
    if (!isAddress(trimmed, { strict: false })) return refused('bad_address');
    if (!this.#persons.take(person)) return this.#refuse('rate_limited');
    if (!this.#addresses.allows(trimmed.toLowerCase())) return this.#refuse('rate_limited');
    const now = this.#now();
    const id = sha256(randomBytes(32).toString('base64url'));
    const challenge = issueChallenge(this.#settings, trimmed, community.name, now);
    await this.#store.createLink({
      id,
      community: community.key,
      communityName: community.name,
      person,
      channel: 'chat',
      miniApp: false,
      pageToken: '',
      createdAt: now.toISOString(),
      expiresAt: challenge.expiresAt,
    });
    await this.#store.setChallenge(id, challenge, now);
    this.#prune(now);
    this.#options.logger.info('verification message issued in the chat');
    const hint = this.#options.signHint?.(challenge.address, challenge.message);
    return {
      ok: true,
      message: challenge.message,
      expiresAt: challenge.expiresAt,
      ...(hint === undefined ? {} : { signHint: hint }),
    };
  }

  async checkChatSignature(community: CommunityRef, person: string, signature: string): Promise<VerificationOutcome> {
    const parsed = parseSignature(signature);
    if (!parsed) return refused('bad_signature_text');
    if (!this.#persons.take(person)) return this.#refuse('rate_limited');
    const now = this.#now();
    const link = await this.#store.openChatLink(community.key, person, now);
    const message = link?.challenge?.message;
    if (!link || !message) return refused('no_message');
    return this.#verify(link, message, parsed, now);
  }

  async walletsOf(person: string, community?: string): Promise<VerifiedWallet[]> {
    return community === undefined ? this.#store.walletsOfPerson(person) : this.#store.walletsOf(community, person);
  }

  async removeWallet(person: string, address: string, community?: string): Promise<VerifiedWallet[]> {
    const lowered = address.trim().toLowerCase();
    const communities =
      community === undefined
        ? [
            ...new Set(
              (await this.#store.walletsOfPerson(person)).filter((w) => w.address === lowered).map((w) => w.community),
            ),
          ]
        : [community];
    const removed: VerifiedWallet[] = [];
    for (const key of communities) {
      const wallet = await this.#store.removeWallet(key, person, lowered);
      if (wallet) removed.push(wallet);
    }
    if (removed.length > 0) this.#options.logger.info({ count: removed.length }, 'wallet removed');
    return removed;
  }

  // ---- the page side

  /** What the page of a link shows (a GET: binds nothing, so that a link preview uses nothing up). */
  async page(token: string): Promise<PageView> {
    const link = await this.#linkOf(token);
    if (!link.ok) return link;
    const { communityName, pageToken, miniApp } = link.link;
    return { ok: true, communityName, pageToken, miniApp, chainId: this.#settings.chainId };
  }

  /** The link's per-link token, which every POST of its page must carry; undefined for an unknown link. */
  async pageTokenOf(token: string): Promise<string | undefined> {
    if (!LINK_TOKEN.test(token)) return undefined;
    return (await this.#store.link(sha256(token)))?.pageToken;
  }

  /** Issues a message for `address` on the page of a link. */
  async pageChallenge(
    token: string,
    address: string,
    caller: PageCaller,
  ): Promise<{ ok: true; message: string } | Refused> {
    const admitted = await this.#admit(token, caller);
    if (!admitted.ok) return admitted;
    const { link, now } = admitted;
    const trimmed = address.trim();
    if (!isAddress(trimmed, { strict: false })) return refused('bad_address');
    if (!this.#addresses.allows(trimmed.toLowerCase())) return this.#refuse('rate_limited');
    if (link.attempts >= MAX_LINK_ATTEMPTS) return this.#refuse('too_many_attempts');
    const challenge = issueChallenge(this.#settings, trimmed, link.communityName, now);
    if (!(await this.#store.setChallenge(link.id, challenge, now))) return refused('link_expired');
    this.#options.logger.info('verification message issued on the page');
    return { ok: true, message: challenge.message };
  }

  /** Checks a signed message posted by the page of a link. */
  async pageSignature(
    token: string,
    message: string,
    signature: string,
    caller: PageCaller,
  ): Promise<VerificationOutcome> {
    const admitted = await this.#admit(token, caller, { signing: true });
    if (!admitted.ok) return admitted;
    const parsed = parseSignature(signature);
    if (!parsed) return refused('bad_signature_text');
    return this.#verify(admitted.link, message, parsed, admitted.now);
  }

  /** Takes the message's nonce (once), checks the message and the signature, and stores the wallet. */
  async #verify(link: VerifyLink, message: string, signature: `0x${string}`, now: Date): Promise<VerificationOutcome> {
    if (link.attempts >= MAX_LINK_ATTEMPTS) return this.#refuse('too_many_attempts');
    const nonce = nonceOf(message);
    if (!nonce) return this.#refuse('not_siwe');
    const challenge = await this.#store.takeChallenge(link.id, nonce, now);
    if (!challenge) {
      const current = await this.#store.link(link.id);
      return this.#refuse(current?.usedAt !== undefined ? 'link_used' : 'wrong_nonce');
    }
    if (!this.#addresses.allows(challenge.address)) return this.#refuse('rate_limited');
    const problem = checkMessage(message, challenge, this.#settings.domain, now);
    if (problem) {
      this.#addresses.take(challenge.address);
      return this.#refuse(problem);
    }
    const checked = await this.#options.checker.check(challenge, signature, this.#settings.domain, now);
    if (!checked.valid) {
      if (checked.reason === 'bad_signature') this.#addresses.take(challenge.address);
      return this.#refuse(checked.reason);
    }
    const done = await this.#store.completeLink(link.id, { address: challenge.address, kind: checked.kind }, now);
    if (!done.ok) return this.#refuse(done.reason === 'used' ? 'link_used' : 'link_unknown');
    this.#options.logger.info({ kind: checked.kind, moved: done.moved, channel: link.channel }, 'wallet verified');
    return { ok: true, wallet: done.wallet, moved: done.moved };
  }

  async #linkOf(token: string): Promise<{ ok: true; link: VerifyLink } | Refused> {
    if (!LINK_TOKEN.test(token)) return refused('link_unknown');
    const link = await this.#store.link(sha256(token));
    if (link?.channel !== 'page') return refused('link_unknown');
    if (link.usedAt !== undefined) return refused('link_used');
    if (Date.parse(link.expiresAt) <= this.#now().getTime()) return refused('link_expired');
    return { ok: true, link };
  }

  /**
   * The link of a page request, once its caller is known to be its person: Telegram's signed data
   * naming them (a Mini App link), or the browser that used it first (any other). A signature may
   * still be sent for a message issued before the link expired.
   */
  async #admit(
    token: string,
    caller: PageCaller,
    options: { signing?: boolean } = {},
  ): Promise<{ ok: true; link: VerifyLink; now: Date } | Refused> {
    const now = this.#now();
    if (!LINK_TOKEN.test(token)) return refused('link_unknown');
    const link = await this.#store.link(sha256(token));
    if (link?.channel !== 'page') return this.#refuse('link_unknown');
    if (link.usedAt !== undefined) return this.#refuse('link_used');
    const expired = Date.parse(link.expiresAt) <= now.getTime();
    const signingInTime =
      options.signing === true && link.challenge !== undefined && Date.parse(link.challenge.expiresAt) > now.getTime();
    if (expired && !signingInTime) return this.#refuse('link_expired');
    if (link.miniApp) {
      if (!caller.initData) return this.#refuse('mini_app_required');
      const identity = this.#options.miniAppIdentity?.(caller.initData, now);
      if (!identity?.ok) return this.#refuse('mini_app_invalid');
      if (identity.person !== link.person) return this.#refuse('other_person');
    } else {
      if (!caller.browser) return this.#refuse('other_browser');
      if (!expired) {
        const bound = await this.#store.bindBrowser(link.id, sha256(caller.browser), now);
        if (bound === 'other') return this.#refuse('other_browser');
        if (bound === 'gone') return this.#refuse('link_expired');
      } else if (link.browser !== sha256(caller.browser)) {
        return this.#refuse('other_browser');
      }
    }
    if (!this.#persons.take(link.person)) return this.#refuse('rate_limited');
    return { ok: true, link, now };
  }

  #refuse(reason: VerificationRefusal): Refused {
    this.#options.logger.info({ reason }, 'verification refused');
    return refused(reason);
  }

  /** Forgets long-expired links, at most once an hour. */
  #prune(now: Date): void {
    if (now.getTime() - this.#pruned < 60 * 60 * 1000) return;
    this.#pruned = now.getTime();
    this.#store
      .pruneLinks(now, LINK_KEEP_MS)
      .catch((error: unknown) => this.#options.logger.warn({ err: error }, 'could not forget expired links'));
  }
}

export { CHALLENGE_TTL_MS };
