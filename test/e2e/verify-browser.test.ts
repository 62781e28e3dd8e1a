// The verification page in a real headless Chromium (from the npm registry: @sparticuz/chromium),
// with a test wallet injected as an EIP-1193 provider announced by EIP-6963 that signs with the
// devnet's test keys, and without any wallet (the paste path).
import chromium from '@sparticuz/chromium';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { type Hex, hexToString } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signMessageAs, type TestWallet, testWallet } from '../../src/devnet/wallets.ts';
import { FakeTelegram } from '../fakes/telegram.ts';
import { COMMUNITY, startVerifyPage, TELEGRAM_TOKEN, type VerifyPageHarness } from '../helpers/verify-page.ts';

let page: VerifyPageHarness;
let browser: Browser;
let telegram: FakeTelegram;

beforeAll(async () => {
  page = await startVerifyPage();
  telegram = await FakeTelegram.start(TELEGRAM_TOKEN);
  browser = await puppeteer.launch({
    executablePath: await chromium.executablePath(),
    args: chromium.args,
    headless: true,
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await telegram?.close();
  await page?.close();
});

const wallet = (index: number): TestWallet => {
  const found = testWallet(index);
  if (!found) throw new Error(`no wallet ${index}`);
  return found;
};

/** An EIP-1193 wallet announced per EIP-6963, signing in Node with a devnet test wallet. */
async function withWallet(tab: Page, signer: TestWallet, name: string): Promise<{ calls: string[] }> {
  const calls: string[] = [];
  await tab.exposeFunction('fwTestSign', async (hexMessage: string, address: string) => {
    calls.push(`personal_sign ${address}`);
    return signMessageAs(signer, hexToString(hexMessage as Hex), page.chainId);
  });
  // Browser code, as the page's own script would meet a wallet extension's.
  await tab.evaluateOnNewDocument(`(() => {
    const address = ${JSON.stringify(signer.address)};
    const provider = {
      async request({ method, params }) {
        if (method === 'eth_requestAccounts' || method === 'eth_accounts') return [address];
        if (method === 'personal_sign' && params) return window.fwTestSign(params[0], params[1]);
        throw Object.assign(new Error('unsupported method ' + method), { code: 4200 });
      },
    };
    const announce = () => window.dispatchEvent(new CustomEvent('eip6963:announceProvider', {
      detail: Object.freeze({
        info: { uuid: '6b1b3c1e-0000-4000-8000-000000000001', name: ${JSON.stringify(name)}, icon: '', rdns: 'test.floorwatch' },
        provider,
      }),
    }));
    window.addEventListener('eip6963:requestProvider', announce);
  })();`);
  return { calls };
}

/** Problems the page itself reports: script errors and refused resources (CSP). */
function watchProblems(tab: Page): string[] {
  const problems: string[] = [];
  tab.on('pageerror', (error) => problems.push(String(error)));
  tab.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  tab.on('requestfailed', (request) => problems.push(`failed ${request.url()}`));
  return problems;
}

async function resultOf(tab: Page): Promise<{ tone: string; text: string }> {
  await tab.waitForFunction(`['success', 'error'].includes(document.getElementById('result')?.dataset.tone)`, {
    timeout: 20_000,
  });
  return tab.$eval('#result', (element) => ({
    tone: element.getAttribute('data-tone') ?? '',
    text: element.textContent ?? '',
  }));
}

describe('the verification page in Chromium', () => {
  it('GIVEN a browser wallet announced by EIP-6963 WHEN the person picks it THEN it signs the message and the wallet is verified', async () => {
    const tab = await browser.newPage();
    const problems = watchProblems(tab);
    const { calls } = await withWallet(tab, wallet(1), 'Test Wallet');
    const link = await page.verification.issuePageLink(COMMUNITY, 'discord:800', { miniApp: false });
    await tab.goto(link.url);
    expect(await tab.$eval('#community', (element) => element.textContent)).toBe('Moon Cats Club');
    const button = await tab.waitForSelector('button.wallet', { timeout: 10_000 });
    expect(await button?.evaluate((element) => element.textContent)).toBe('Sign with Test Wallet');
    await button?.click();
    const result = await resultOf(tab);
    expect(result).toMatchObject({ tone: 'success' });
    expect(result.text).toContain('is verified');
    expect(calls).toEqual([`personal_sign ${wallet(1).address}`]);
    expect(await page.verification.walletsOf('discord:800', COMMUNITY.key)).toMatchObject([
      { address: wallet(1).address, kind: 'eoa' },
    ]);
    expect(problems).toEqual([]);
    await tab.close();
  });

  it('GIVEN a counterfactual contract wallet in the browser THEN its ERC-6492 signature verifies it', async () => {
    const tab = await browser.newPage();
    await withWallet(tab, wallet(3), 'Smart Wallet');
    const link = await page.verification.issuePageLink(COMMUNITY, 'discord:801', { miniApp: false });
    await tab.goto(link.url);
    await (await tab.waitForSelector('button.wallet', { timeout: 10_000 }))?.click();
    expect(await resultOf(tab)).toMatchObject({ tone: 'success' });
    expect(await page.verification.walletsOf('discord:801', COMMUNITY.key)).toMatchObject([{ kind: 'contract' }]);
    await tab.close();
  });

  it('GIVEN no wallet in the browser WHEN the person pastes a signature made elsewhere THEN the wallet is verified', async () => {
    const tab = await browser.newPage();
    const problems = watchProblems(tab);
    const link = await page.verification.issuePageLink(COMMUNITY, 'discord:802', { miniApp: false });
    await tab.goto(link.url);
    await tab.waitForFunction(`document.getElementById('wallet-status')?.textContent?.startsWith('No wallet')`, {
      timeout: 10_000,
    });
    await tab.type('#address', wallet(2).address);
    await tab.click('#get-message');
    await tab.waitForFunction(`!document.getElementById('paste-steps').hidden`, { timeout: 10_000 });
    const message = await tab.$eval('#message', (element) => (element as unknown as { value: string }).value);
    expect(message).toContain('wants you to sign in with your Ethereum account');
    await tab.type('#signature', await signMessageAs(wallet(2), message, page.chainId));
    await tab.click('#send-signature');
    expect(await resultOf(tab)).toMatchObject({ tone: 'success' });
    expect(await page.verification.walletsOf('discord:802', COMMUNITY.key)).toMatchObject([
      { address: wallet(2).address, kind: 'contract' },
    ]);
    expect(problems).toEqual([]);
    await tab.close();
  });

  it('GIVEN a Telegram Mini App link WHEN opened with Telegram launch data THEN the page sends it and the wallet is verified', async () => {
    const tab = await browser.newPage();
    await withWallet(tab, wallet(4), 'Test Wallet');
    const link = await page.verification.issuePageLink(COMMUNITY, 'telegram:9001', { miniApp: true });
    expect(link.miniApp).toBe(true);
    await tab.goto(telegram.webAppLaunchUrl(link.url, 9001));
    await (await tab.waitForSelector('button.wallet', { timeout: 10_000 }))?.click();
    expect(await resultOf(tab)).toMatchObject({ tone: 'success' });
    // Opened outside Telegram (no launch data), the same kind of link refuses.
    const other = await page.verification.issuePageLink(COMMUNITY, 'telegram:9001', { miniApp: true });
    await tab.goto(other.url);
    await (await tab.waitForSelector('button.wallet', { timeout: 10_000 }))?.click();
    const refused = await resultOf(tab);
    expect(refused.tone).toBe('error');
    expect(refused.text).toContain('from the button in your Telegram chat');
    await tab.close();
  });

  it('GIVEN a hostile community name THEN the page shows it as text and runs no script of it', async () => {
    const tab = await browser.newPage();
    const problems = watchProblems(tab);
    const name = '<img src=x onerror="document.title=\'owned\'"><script>document.title="owned"</script>';
    const link = await page.verification.issuePageLink({ key: 'discord:3000', name }, 'discord:803', {
      miniApp: false,
    });
    await tab.goto(link.url);
    expect(await tab.$eval('#community', (element) => element.textContent)).toBe(name);
    expect(await tab.title()).toBe('Verify a wallet');
    expect(problems).toEqual([]);
    await tab.close();
  });
});
