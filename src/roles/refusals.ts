import type { Refused, VerificationRefusal } from '../core/wallets.ts';

/** What a person reads for each refusal, on the page and in the chat: the one place these words live. */
export const REFUSAL_TEXT: Readonly<Record<VerificationRefusal, string>> = {
  link_unknown: 'This link does not work. Run /verify again for a new one.',
  link_used: 'This link was already used. Run /verify again to verify another wallet.',
  link_expired: 'This link has expired. Run /verify again for a new one.',
  other_browser: 'This link was opened in another browser first. Run /verify again for a link of your own.',
  other_person: 'This link belongs to someone else. Run /verify yourself for a link of your own.',
  mini_app_required: 'Open this page from the button in your Telegram chat with the bot.',
  mini_app_invalid: 'Telegram did not vouch for this page. Close it and open it again from the button in the chat.',
  rate_limited: 'Too many attempts. Wait a few minutes and try again.',
  too_many_attempts: 'This link was tried too many times. Run /verify again for a new one.',
  bad_address: 'That is not a wallet address: it should look like 0x followed by 40 hexadecimal characters.',
  bad_signature_text:
    'That is not a signature: it should be 0x followed by hexadecimal characters, as your wallet gave it.',
  no_message: 'There is no message to sign yet: ask for one first.',
  not_siwe: 'That is not the sign-in message issued here. Sign the message exactly as shown.',
  wrong_domain: 'The signed message is for another website. Sign the message issued here.',
  wrong_nonce: 'The signed message is not the latest one issued here, or it was already tried. Ask for a new message.',
  wrong_address: 'The signed message names another address. Ask for a message for the wallet you sign with.',
  expired: 'The message has expired (they last 10 minutes). Ask for a new one.',
  changed: 'The signed message differs from the one issued here. Sign it exactly as shown, without changes.',
  bad_signature: 'The signature does not match the message and the address. Sign with the wallet the message names.',
  contract_unchecked:
    'This looks like a contract wallet, which can only be checked on the chain, and the bot has no chain access (FLOORWATCH_RPC_URL).',
  chain_unreachable: 'The chain could not be reached to check this contract wallet. Try again in a moment.',
  unavailable: 'Wallet verification is not available right now. Try again later.',
};

export function refused(reason: VerificationRefusal): Refused {
  return { ok: false, reason, text: REFUSAL_TEXT[reason] };
}
