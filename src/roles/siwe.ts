/**
 * Sign-In with Ethereum (EIP-4361) for wallet verification: the message the bot issues, and the
 * checks of a signed one. Built on viem's `viem/siwe` (create, parse, validate) and viem's
 * signature verification: an EOA's signature is checked locally by recovering its address; any
 * other (a contract wallet's ERC-1271 answer, a counterfactual wallet's ERC-6492 signature) through
 * the chain's JSON-RPC with a public client's `verifySiweMessage`.
 */
import {
  createPublicClient,
  custom,
  getAddress,
  type Hex,
  HttpRequestError,
  http,
  isAddressEqual,
  isHex,
  recoverMessageAddress,
  size,
  TimeoutError,
} from 'viem';
import { createSiweMessage, generateSiweNonce, parseSiweMessage, verifySiweMessage } from 'viem/siwe';
import { INVISIBLE } from '../core/reply.ts';
import type { Challenge, WalletKind } from '../core/wallets.ts';

/** How long a message may be signed after it was issued (EIP-4361 Expiration Time). */
export const CHALLENGE_TTL_MS = 10 * 60 * 1000;
/** The longest community name put in a statement. */
const STATEMENT_NAME_MAX = 60;
/** Longest signature accepted (an ERC-6492 one carries its factory call: a few hundred bytes). */
export const MAX_SIGNATURE_BYTES = 4_096;

export interface ChallengeSettings {
  /** The public host (`host[:port]`), the message's domain. */
  domain: string;
  /** The page's address, the message's URI. */
  uri: string;
  chainId: number;
}

/**
 * A community name fit for a one-line statement: no line breaks, control, direction or invisible
 * characters, at most {@link STATEMENT_NAME_MAX} characters.
 */
export function statementName(name: string): string {
  const clean = name
    .replace(INVISIBLE, '')
    .replace(/[\s\p{Cc}\p{Cf}]+/gu, ' ')
    .trim();
  const cut = [...clean].slice(0, STATEMENT_NAME_MAX).join('');
  return cut.length < clean.length ? `${cut}…` : cut || 'this community';
}

/** Issues a message for `address` with a fresh single-use nonce, valid {@link CHALLENGE_TTL_MS}. */
export function issueChallenge(
  settings: ChallengeSettings,
  address: string,
  communityName: string,
  now: Date,
): Challenge {
  const nonce = generateSiweNonce();
  const expiresAt = new Date(now.getTime() + CHALLENGE_TTL_MS);
  const message = createSiweMessage({
    domain: settings.domain,
    address: getAddress(address),
    statement: `Verify this wallet for ${statementName(communityName)} with Floorwatch. Signing costs nothing and allows no transaction.`,
    uri: settings.uri,
    version: '1',
    chainId: settings.chainId,
    nonce,
    issuedAt: now,
    expirationTime: expiresAt,
  });
  return {
    nonce,
    address: address.toLowerCase(),
    message,
    issuedAt: now.toISOString(),
    expiresAt: expiresAt.toISOString(),
  };
}

/** The nonce a signed text claims, when it reads as an EIP-4361 message. */
export function nonceOf(message: string): string | undefined {
  const parsed = parseSiweMessage(message);
  return parsed.address && typeof parsed.nonce === 'string' ? parsed.nonce : undefined;
}

/** Why a signed message does not answer the challenge it claims. */
export type MessageProblem = 'not_siwe' | 'wrong_domain' | 'wrong_nonce' | 'wrong_address' | 'expired' | 'changed';

/**
 * Checks a signed text against the challenge taken for it: an EIP-4361 message of the public
 * domain, the challenge's nonce and address, not expired, and otherwise exactly the text issued.
 */
export function checkMessage(
  message: string,
  challenge: Challenge,
  domain: string,
  now: Date,
): MessageProblem | undefined {
  const parsed = parseSiweMessage(message);
  if (!parsed.address || !parsed.nonce) return 'not_siwe';
  if (parsed.domain !== domain) return 'wrong_domain';
  if (parsed.nonce !== challenge.nonce) return 'wrong_nonce';
  if (!isAddressEqual(parsed.address, getAddress(challenge.address))) return 'wrong_address';
  if (now.getTime() >= Date.parse(challenge.expiresAt)) return 'expired';
  if (parsed.expirationTime && now.getTime() >= parsed.expirationTime.getTime()) return 'expired';
  if (message !== challenge.message) return 'changed';
  return undefined;
}

/** The outcome of checking a signature. */
export type SignatureCheck =
  | { valid: true; kind: WalletKind }
  | { valid: false; reason: 'bad_signature' | 'contract_unchecked' | 'chain_unreachable' };

/** A signature as typed or sent: `0x` hex of whole bytes, of a sane length. */
export function parseSignature(text: string): Hex | undefined {
  const trimmed = text.trim();
  if (!isHex(trimmed, { strict: true }) || trimmed.length % 2 !== 0) return undefined;
  const bytes = size(trimmed);
  return bytes >= 64 && bytes <= MAX_SIGNATURE_BYTES ? trimmed : undefined;
}

/** Checks signatures of issued messages: EOAs locally, contract wallets through `rpcUrl`. */
export class SignatureChecker {
  readonly #rpcUrl: string | undefined;
  readonly #timeoutMs: number;

  /** `rpcUrl`: the chain's JSON-RPC (undefined: only EOAs can be checked). */
  constructor(rpcUrl: string | undefined, options: { timeoutMs?: number } = {}) {
    this.#rpcUrl = rpcUrl;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
  }

  /** Whether contract wallets can be checked. */
  get checksContracts(): boolean {
    return this.#rpcUrl !== undefined;
  }

  async check(challenge: Challenge, signature: Hex, domain: string, now: Date): Promise<SignatureCheck> {
    const address = getAddress(challenge.address);
    if (size(signature) === 65) {
      try {
        const recovered = await recoverMessageAddress({ message: challenge.message, signature });
        if (isAddressEqual(recovered, address)) return { valid: true, kind: 'eoa' };
      } catch {
        // Not a recoverable signature: a contract wallet's, perhaps.
      }
    }
    if (!this.#rpcUrl) return { valid: false, reason: size(signature) === 65 ? 'bad_signature' : 'contract_unchecked' };
    // viem reports a failed eth_call as an invalid signature: whether the chain answered at all is noted here.
    let unreachable = false;
    const inner = http(this.#rpcUrl, { retryCount: 1, timeout: this.#timeoutMs })({});
    const transport = custom({
      request: async (args: Parameters<typeof inner.request>[0]) => {
        try {
          return await inner.request(args);
        } catch (error) {
          if (error instanceof HttpRequestError || error instanceof TimeoutError) unreachable = true;
          throw error;
        }
      },
    });
    const client = createPublicClient({ transport, cacheTime: 0 });
    const valid = await verifySiweMessage(client, {
      message: challenge.message,
      signature,
      address,
      domain,
      nonce: challenge.nonce,
      time: now,
    }).catch(() => false);
    if (valid) return { valid: true, kind: 'contract' };
    return { valid: false, reason: unreachable ? 'chain_unreachable' : 'bad_signature' };
  }
}
