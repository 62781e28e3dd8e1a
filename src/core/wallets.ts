/**
 * Verified wallets and the one-time verification links that prove them: the port the wallet
 * verification (roles/verification.ts) writes through and the role rules read from. Two adapters
 * honour it the same way: a file of its own in the data directory (store/files/wallets.ts) and PostgreSQL
 * (store/pg/wallets.ts), where every change is made once whatever the number of processes.
 *
 * Keys: a community is `platform:id` (`discord:<guild id>`, `telegram:<group chat id>`,
 * `console:terminal`); a person is `platform:user id` (`discord:<user id>`, `telegram:<user id>`,
 * `console:local`). Addresses are lower-case `0x` + 40 hex digits.
 *
 * Wallets are private: nothing here is ever shown to anyone but the person they belong to.
 */

/** How a wallet proved itself: a key's own signature (EOA), or a contract's answer (ERC-1271, ERC-6492). */
export type WalletKind = 'eoa' | 'contract';

/** A wallet a person proved in a community. A wallet belongs to one person per community. */
export interface VerifiedWallet {
  community: string;
  person: string;
  /** Lower-case `0x` address. */
  address: string;
  kind: WalletKind;
  /** ISO time of the verification. */
  verifiedAt: string;
}

/** A person's wallets in one community, oldest first. */
export interface PersonWallets {
  person: string;
  wallets: VerifiedWallet[];
}

/**
 * A change of the verified wallets. `linked` with `previousPerson`: the wallet moved from that
 * person to `wallet.person` (re-linked by its new owner), so the previous person's grants that came
 * from it must be re-evaluated too.
 */
export type WalletChange =
  | { type: 'linked'; wallet: VerifiedWallet; previousPerson?: string }
  | { type: 'removed'; wallet: VerifiedWallet };

/**
 * The verified wallets, as the role rules read them. Listeners hear of every durable change,
 * including (with a shared database) those made by other processes.
 */
export interface WalletRegistry {
  /** A person's wallets in one community, oldest first. */
  walletsOf(community: string, person: string): Promise<VerifiedWallet[]>;
  /** A person's wallets in every community, oldest first (a private chat has no community). */
  walletsOfPerson(person: string): Promise<VerifiedWallet[]>;
  /**
   * Every community where an address is verified, with its person (a transfer re-evaluates the
   * two wallets it concerns).
   */
  byAddress(address: string): Promise<VerifiedWallet[]>;
  /** Every wallet of a community, a page at a time. */
  walletsIn(community: string): AsyncIterable<readonly VerifiedWallet[]>;
  /**
   * The people of a community with their wallets, by person key in code-point order: at most
   * `limit` people after `after` (the full re-check of holder roles reads them so, and resumes after
   * the last person it finished).
   */
  peopleIn(community: string, after: string | undefined, limit: number): Promise<PersonWallets[]>;
  /** Removes a person's wallet from a community; the removed wallet, or undefined when it was not theirs. */
  removeWallet(community: string, person: string, address: string): Promise<VerifiedWallet | undefined>;
  onWalletsChanged(listener: (change: WalletChange) => void): void;
}

/** Where a verification link is used: the page the bot serves, or the chat itself (paste a signature). */
export type LinkChannel = 'page' | 'chat';

/** A Sign-In with Ethereum message issued for one address, with its single-use nonce. */
export interface Challenge {
  nonce: string;
  /** Lower-case `0x` address the message names. */
  address: string;
  /** The exact EIP-4361 text issued. */
  message: string;
  issuedAt: string;
  expiresAt: string;
}

/**
 * A one-time verification link. The bearer token in the link's URL is never stored: `id` is its
 * SHA-256, so that a copy of the store opens no link.
 */
export interface VerifyLink {
  id: string;
  community: string;
  /** The community's name as the chat platform gave it (untrusted text). */
  communityName: string;
  person: string;
  channel: LinkChannel;
  /** Opened as a Telegram Mini App: the page must present Telegram's signed data for `person`. */
  miniApp: boolean;
  /** Sent back with every request of the page (a per-link token against cross-site requests). */
  pageToken: string;
  createdAt: string;
  /** No new message is issued after this time. */
  expiresAt: string;
  /** SHA-256 of the browser that first used the link (page links not opened as a Mini App). */
  browser?: string;
  /** The message issued last, until a signature for it is tried. */
  challenge?: Challenge;
  /** Signatures tried with this link. */
  attempts: number;
  /** Set once a wallet was verified with it; the link then works no more. */
  usedAt?: string;
}

export type NewVerifyLink = Omit<VerifyLink, 'attempts' | 'browser' | 'challenge' | 'usedAt'>;

/** The outcome of binding a link to a browser. */
export type BindOutcome = 'bound' | 'other' | 'gone';

/** The outcome of completing a link: the wallet stored, or why not. */
export type CompleteOutcome =
  | { ok: true; wallet: VerifiedWallet; moved: boolean }
  | { ok: false; reason: 'used' | 'gone' };

/**
 * The one-time links and their messages. Every operation that consumes something is atomic: a
 * link binds to one browser, a nonce is taken once, a link completes once, whatever the number of
 * processes and requests racing for it.
 */
export interface VerificationLinks {
  /** Stores a new link; the person's other unused links for the same community and channel stop working. */
  createLink(link: NewVerifyLink): Promise<void>;
  /** A link by id (also used or expired ones, until pruned). */
  link(id: string): Promise<VerifyLink | undefined>;
  /** The person's newest unused chat link in a community. */
  openChatLink(community: string, person: string, now: Date): Promise<VerifyLink | undefined>;
  /** Binds an unused link to a browser the first time; `other` when another browser has it. */
  bindBrowser(id: string, browser: string, now: Date): Promise<BindOutcome>;
  /** Issues a message on an unused, unexpired link, replacing any earlier one; false when the link cannot take it. */
  setChallenge(id: string, challenge: Challenge, now: Date): Promise<boolean>;
  /**
   * Takes the link's message, if the link is unused: whatever was signed, the message can never be
   * taken again (each message is tried once). Resolves with it only when its nonce is `nonce`.
   * Counts an attempt either way.
   */
  takeChallenge(id: string, nonce: string, now: Date): Promise<Challenge | undefined>;
  /**
   * Marks the link used and links the wallet to the link's person in its community, moving it
   * from whoever had it there; both or neither.
   */
  completeLink(id: string, wallet: { address: string; kind: 'eoa' | 'contract' }, now: Date): Promise<CompleteOutcome>;
  /** Forgets links that expired more than `keepMs` ago; how many. */
  pruneLinks(now: Date, keepMs: number): Promise<number>;
}

/** The store of wallet verification: both ports, and closing. */
export interface WalletStore extends WalletRegistry, VerificationLinks {
  /** Resolves once every change made so far is durable (or has failed). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** A community as a command sees it: its key and its name (untrusted text from the chat platform). */
export interface CommunityRef {
  /** `platform:id` (see the module comment). */
  key: string;
  name: string;
}

/** Why a verification step was refused; each has one text for people (roles/refusals.ts). */
export type VerificationRefusal =
  | 'link_unknown'
  | 'link_used'
  | 'link_expired'
  | 'other_browser'
  | 'other_person'
  | 'mini_app_required'
  | 'mini_app_invalid'
  | 'rate_limited'
  | 'too_many_attempts'
  | 'bad_address'
  | 'bad_signature_text'
  | 'no_message'
  | 'not_siwe'
  | 'wrong_domain'
  | 'wrong_nonce'
  | 'wrong_address'
  | 'expired'
  | 'changed'
  | 'bad_signature'
  | 'contract_unchecked'
  | 'chain_unreachable'
  | 'unavailable';

export type Refused = { ok: false; reason: VerificationRefusal; text: string };

/** The end of a verification: the wallet stored (`moved`: it was another person's in this community), or why not. */
export type VerificationOutcome = { ok: true; wallet: VerifiedWallet; moved: boolean } | Refused;

/** What the `/verify` command needs of wallet verification (roles/verification.ts implements it). */
export interface WalletVerificationPort {
  /** Whether the bot serves the verification page (FLOORWATCH_PUBLIC_URL is set). */
  readonly pageAvailable: boolean;
  /**
   * A one-time link to the page for a person in a community. `miniApp`: it is to open as a Telegram
   * Mini App, whose signed data must then name the person; the answer says whether it can (the
   * public address must be https, or a local one). The person's earlier page link for that
   * community stops working.
   */
  issuePageLink(
    community: CommunityRef,
    person: string,
    options: { miniApp: boolean },
  ): Promise<{ url: string; miniApp: boolean }>;
  /** The paste path in the chat itself: a message for `address` to sign anywhere. */
  issueChatMessage(
    community: CommunityRef,
    person: string,
    address: string,
  ): Promise<{ ok: true; message: string; expiresAt: string; signHint?: string } | Refused>;
  /** Checks a pasted signature of the person's last chat message in the community. */
  checkChatSignature(community: CommunityRef, person: string, signature: string): Promise<VerificationOutcome>;
  /** A person's wallets in one community, or in all of them (a private chat). */
  walletsOf(person: string, community?: string): Promise<VerifiedWallet[]>;
  /** Removes a person's wallet from one community, or from all of theirs; the removed ones. */
  removeWallet(person: string, address: string, community?: string): Promise<VerifiedWallet[]>;
  /** The local platform's test wallets (none with a real platform). */
  testWallets(): ReadonlyArray<{ index: number; kind: string; address: string }>;
}
