import type { CommandContext } from '../src/bot/command.ts';
import { defineCommand } from '../src/bot/command.ts';
import { code, type Reply, type Rich } from '../src/core/reply.ts';
import type { CommunityRef, VerifiedWallet } from '../src/core/wallets.ts';

const ACTIONS = ['link', 'list', 'remove', 'address', 'signature'] as const;
const TEST_WALLET_TEXT: Record<string, string> = {
  eoa: 'EOA',
  contract: 'contract wallet (ERC-1271)',
  counterfactual: 'contract wallet, not deployed (ERC-6492)',
};

/** Every answer is for the person alone: wallets are private. */
function answer(reply: Omit<Reply, 'ephemeral'>): Reply {
  return { ...reply, ephemeral: true };
}

function communityOf(ctx: CommandContext): CommunityRef | undefined {
  const community = ctx.chat.community;
  return community ? { key: `${ctx.chat.platform}:${community.id}`, name: community.name } : undefined;
}

const short = (address: string) => `${address.slice(0, 6)}…${address.slice(-4)}`;

function walletLine(wallet: VerifiedWallet): Rich {
  const kind = wallet.kind === 'eoa' ? 'EOA' : 'contract wallet';
  return [code(wallet.address), ` ${kind}, verified ${wallet.verifiedAt.slice(0, 10)}`];
}

/** Where a person verifies: the community's name for the texts. */
function noCommunity(ctx: CommandContext): Reply {
  const where = ctx.chat.platform === 'telegram' ? 'the group' : 'the server';
  return answer({
    tone: 'info',
    title: 'Verify a wallet',
    lines: [
      `Wallets are verified for a community: send /verify in ${where} you want to verify for, and I will answer you privately.`,
    ],
  });
}

/** The chat's own paste path: what to type, and the local platform's test wallets. */
function pastePath(ctx: CommandContext): Rich[] {
  const lines: Rich[] = [
    'Without the page: send /verify address 0x… with your wallet address; I answer with a message to sign (personal_sign) with that wallet, anywhere; then send /verify signature 0x… with the signature.',
  ];
  const wallets = ctx.verification?.testWallets() ?? [];
  if (wallets.length > 0) {
    lines.push('Test wallets of the local platform (TEST ONLY, their keys are public):');
    for (const wallet of wallets) {
      lines.push([`${wallet.index}. `, code(wallet.address), ` ${TEST_WALLET_TEXT[wallet.kind] ?? wallet.kind}`]);
    }
  }
  return lines;
}

export default defineCommand({
  name: 'verify',
  // About this chat's own setup: where the bot answers one person among others, only they see it.
  personal: true,
  description: 'Verify a wallet you hold, privately (list or remove yours)',
  example: '/verify',
  options: [
    {
      name: 'action',
      type: 'choice',
      description: 'link (the default), list, remove; address and signature for the paste path',
      choices: ACTIONS,
    },
    {
      name: 'value',
      type: 'text',
      description: 'The wallet address (remove, address) or the signature (signature)',
      maxLength: 10_000,
    },
  ],
  async run(ctx, { action = 'link', value }) {
    const verification = ctx.verification;
    if (!verification) {
      return answer({ tone: 'warning', lines: ['Wallet verification is not set up on this bot.'] });
    }
    const community = communityOf(ctx);
    const person = `${ctx.chat.platform}:${ctx.actor.id}`;
    // A group sees nothing of anyone's wallets: the person goes to their private chat with the bot.
    if (ctx.chat.platform === 'telegram' && ctx.chat.kind === 'group') {
      return {
        tone: 'info',
        lines: [
          'Wallets are verified in private. Open our private chat to verify one for this group; there, /verify list shows yours.',
        ],
        buttons: [[{ label: 'Verify privately', privateCommand: 'verify' }]],
      };
    }

    if (action === 'list') {
      const wallets = await verification.walletsOf(person, community?.key);
      if (wallets.length === 0) {
        return answer({
          tone: 'info',
          title: 'Your wallets',
          lines: [
            community
              ? 'You have verified no wallet here yet. Send /verify to verify one.'
              : 'You have verified no wallet yet.',
          ],
        });
      }
      if (community) {
        return answer({ tone: 'info', title: `Your wallets in ${community.name}`, lines: wallets.map(walletLine) });
      }
      const byCommunity = new Map<string, VerifiedWallet[]>();
      for (const wallet of wallets)
        byCommunity.set(wallet.community, [...(byCommunity.get(wallet.community) ?? []), wallet]);
      return answer({
        tone: 'info',
        title: 'Your wallets',
        fields: [...byCommunity].map(([key, list]) => ({
          name: `Community ${key.slice(key.indexOf(':') + 1)}`,
          value: list.map((w) => `${w.address} (${w.kind === 'eoa' ? 'EOA' : 'contract wallet'})`).join('\n'),
        })),
      });
    }

    if (action === 'remove') {
      if (!value) return answer({ tone: 'warning', lines: ['Say which wallet: /verify remove 0x…'] });
      const removed = await verification.removeWallet(person, value, community?.key);
      if (removed.length === 0) {
        return answer({ tone: 'warning', lines: ['That wallet is not one of yours here. /verify list shows yours.'] });
      }
      return answer({
        tone: 'success',
        lines: [
          `Wallet ${short(value.trim().toLowerCase())} removed${community ? '' : ` from ${removed.length} community(ies)`}.`,
        ],
      });
    }

    if (!community) return noCommunity(ctx);

    if (action === 'address') {
      if (!value) return answer({ tone: 'warning', lines: ['Say which wallet: /verify address 0x…'] });
      const issued = await verification.issueChatMessage(community, person, value);
      if (!issued.ok) return answer({ tone: 'warning', lines: [issued.text] });
      const lines: Rich[] = [
        'Sign this message exactly as it is (personal_sign) with that wallet, within 10 minutes:',
        '',
        issued.message,
        '',
        'Then send /verify signature 0x… with the signature.',
      ];
      if (issued.signHint)
        lines.push("With the local platform's test wallet, this command signs it (TEST ONLY):", '', issued.signHint);
      return answer({ tone: 'info', title: 'Sign this message', lines });
    }

    if (action === 'signature') {
      if (!value) return answer({ tone: 'warning', lines: ['Paste the signature: /verify signature 0x…'] });
      const outcome = await verification.checkChatSignature(community, person, value);
      if (!outcome.ok) return answer({ tone: 'warning', lines: [outcome.text] });
      const lines: Rich[] = [`Wallet ${short(outcome.wallet.address)} is verified for ${community.name}.`];
      if (outcome.moved)
        lines.push('It was linked to another account in this community; it is now linked to yours only.');
      return answer({ tone: 'success', title: 'Wallet verified', lines });
    }

    // The one-time link to the page.
    if (!verification.pageAvailable) {
      if (ctx.chat.platform === 'console') {
        return answer({ tone: 'info', title: 'Verify a wallet', lines: pastePath(ctx) });
      }
      return answer({
        tone: 'warning',
        lines: [
          "Wallet verification needs the bot's web page, which is not set up: the bot's operator must set FLOORWATCH_PUBLIC_URL.",
        ],
      });
    }
    const link = await verification.issuePageLink(community, person, {
      miniApp: ctx.chat.platform === 'telegram' && ctx.chat.kind === 'private',
    });
    const lines: Rich[] = [
      `Verify a wallet for ${community.name}: the button opens a page where your wallet signs a message (free, no transaction). The link works once, for you only, for 30 minutes.`,
    ];
    if (ctx.chat.platform === 'console') lines.push(...pastePath(ctx));
    return answer({
      tone: 'info',
      title: 'Verify a wallet',
      lines,
      buttons: [[{ label: 'Open the verification page', url: link.url, webApp: link.miniApp }]],
    });
  },
});
