/**
 * `npm run devnet -- wallets` and `npm run devnet -- sign --wallet <n> '<message>'`: the devnet's
 * test wallets, and a signature of a message by one of them (what a wallet app's "sign message"
 * gives), to paste into `/verify signature`. TEST ONLY: the keys are public.
 */
import { parseArgs } from 'node:util';
import { parseSiweMessage } from 'viem/siwe';
import { NETWORK_BLUEPRINTS } from './catalog.ts';
import { signMessageAs, TEST_WALLET_COUNT, TEST_WALLETS, testWallet } from './wallets.ts';

const KIND_TEXT = {
  eoa: 'EOA (a plain key)',
  contract: 'contract wallet, deployed (ERC-1271)',
  counterfactual: 'contract wallet, not deployed yet (ERC-6492)',
} as const;

const SIGN_HELP = `Usage: npm run --silent devnet -- sign --wallet <1-${TEST_WALLET_COUNT}> '<message>'

Signs the message (EIP-191 personal_sign) with a devnet test wallet and prints the signature.
For contract wallets the chain id comes from the message's "Chain ID:" line, or --chain-id <n>.
TEST ONLY: these keys are public; never use them for anything of value.`;

/** Runs a wallet subcommand; the exit code. `out` and `err` take whole lines. */
export async function runWalletCommand(
  args: readonly string[],
  out: (text: string) => void,
  err: (text: string) => void,
): Promise<number> {
  const [command, ...rest] = args;
  if (command === 'wallets') {
    out('Devnet test wallets (TEST ONLY: their keys are public):');
    for (const wallet of TEST_WALLETS) out(`  ${wallet.index}  ${wallet.address}  ${KIND_TEXT[wallet.kind]}`);
    out("Sign a message with: npm run --silent devnet -- sign --wallet <n> '<message>'");
    return 0;
  }
  let parsed: ReturnType<typeof parseSign>;
  try {
    parsed = parseSign(rest);
  } catch (error) {
    err(`devnet sign: ${(error as Error).message}\n\n${SIGN_HELP}`);
    return 2;
  }
  if (parsed === 'help') {
    out(SIGN_HELP);
    return 0;
  }
  const wallet = testWallet(parsed.wallet);
  if (!wallet) {
    err(`devnet sign: there is no test wallet ${parsed.wallet}; they are numbered 1 to ${TEST_WALLET_COUNT}.`);
    return 2;
  }
  const chainId = parsed.chainId ?? parseSiweMessage(parsed.message).chainId ?? NETWORK_BLUEPRINTS[0]?.chainId ?? 1;
  out(await signMessageAs(wallet, parsed.message, chainId));
  err(`signed with test wallet ${wallet.index} (${wallet.address}, ${KIND_TEXT[wallet.kind]}); TEST ONLY`);
  return 0;
}

function parseSign(args: readonly string[]): { wallet: number; chainId: number | undefined; message: string } | 'help' {
  const { values, positionals } = parseArgs({
    args: [...args],
    options: {
      wallet: { type: 'string', short: 'w' },
      'chain-id': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: true,
  });
  if (values.help) return 'help';
  if (!values.wallet || !/^\d{1,3}$/.test(values.wallet)) throw new Error('--wallet <n> is required');
  const chainText = values['chain-id'];
  if (chainText !== undefined && !/^\d{1,12}$/.test(chainText)) throw new Error('--chain-id must be a number');
  if (positionals.length !== 1) throw new Error('give the message as one argument, in single quotes');
  return {
    wallet: Number(values.wallet),
    chainId: chainText === undefined ? undefined : Number(chainText),
    message: positionals[0] as string,
  };
}
