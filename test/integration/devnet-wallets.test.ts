import { createPublicClient, hashMessage, http, type PublicClient } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { parseErc6492Signature } from 'viem/utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevnet } from '../../src/devnet/index.ts';
import type { Devnet } from '../../src/devnet/types.ts';
import { ERC1271_MAGIC, signMessageAs, TEST_WALLETS, type TestWallet, testWallet } from '../../src/devnet/wallets.ts';
import { post } from './devnet-helpers.ts';

let devnet: Devnet;
let rpc: PublicClient;
let rpcUrl: string;
let chainId: number;

beforeAll(async () => {
  devnet = await startDevnet({ scale: 'small' });
  rpcUrl = devnet.chainRpcUrl.replace('{network}', 'devnet');
  rpc = createPublicClient({ transport: http(rpcUrl, { retryCount: 0 }), cacheTime: 0 });
  chainId = await rpc.getChainId();
});

afterAll(async () => {
  await devnet.close();
});

const wallet = (index: number): TestWallet => {
  const found = testWallet(index);
  if (!found) throw new Error(`no test wallet ${index}`);
  return found;
};

describe('devnet test wallets', () => {
  it('GIVEN the test wallets THEN there are EOAs, deployed contract wallets and counterfactual ones, stable across runs', () => {
    expect(TEST_WALLETS.map((w) => w.kind)).toEqual([
      'eoa',
      'contract',
      'counterfactual',
      'eoa',
      'contract',
      'counterfactual',
    ]);
    expect(wallet(1).address).toBe(privateKeyToAccount(wallet(1).privateKey).address.toLowerCase());
    expect(new Set(TEST_WALLETS.map((w) => w.address)).size).toBe(TEST_WALLETS.length);
  });

  it('GIVEN each kind of wallet WHEN viem verifies its signature through the chain RPC THEN it is valid', async () => {
    for (const w of TEST_WALLETS) {
      const message = `hello from wallet ${w.index}`;
      const signature = await signMessageAs(w, message, chainId);
      expect(await rpc.verifyMessage({ address: w.address, message, signature }), `wallet ${w.index}`).toBe(true);
    }
  });

  it('GIVEN a contract wallet WHEN asked for its code and its ERC-1271 answer THEN it is deployed and answers the magic value', async () => {
    const contract = wallet(2);
    expect(await rpc.getCode({ address: contract.address })).toMatch(/^0x363d3d37/);
    expect(await rpc.getCode({ address: wallet(3).address })).toBeUndefined();
    const message = 'proof';
    const signature = await signMessageAs(contract, message, chainId);
    const answer = await rpc.readContract({
      address: contract.address,
      abi: [
        {
          type: 'function',
          name: 'isValidSignature',
          stateMutability: 'view',
          inputs: [
            { name: 'hash', type: 'bytes32' },
            { name: 'signature', type: 'bytes' },
          ],
          outputs: [{ type: 'bytes4' }],
        },
      ],
      functionName: 'isValidSignature',
      args: [hashMessage(message), signature],
    });
    expect(answer).toBe(ERC1271_MAGIC);
  });

  it('GIVEN signatures of another message, another wallet or another chain THEN verification fails', async () => {
    const message = 'the right message';
    for (const w of TEST_WALLETS) {
      const other = await signMessageAs(w, 'another message', chainId);
      expect(await rpc.verifyMessage({ address: w.address, message, signature: other }), `wallet ${w.index}`).toBe(
        false,
      );
    }
    // Wallet 4's key signs, wallet 1 is claimed.
    const byAnother = await signMessageAs(wallet(4), message, chainId);
    expect(await rpc.verifyMessage({ address: wallet(1).address, message, signature: byAnother })).toBe(false);
    // The owner of contract wallet 2 signs for wallet 5's address: the digest names wallet 2.
    const forWallet2 = await signMessageAs(wallet(2), message, chainId);
    expect(await rpc.verifyMessage({ address: wallet(5).address, message, signature: forWallet2 })).toBe(false);
    // A contract wallet signature made for another chain id.
    const otherChain = await signMessageAs(wallet(2), message, chainId + 1);
    expect(await rpc.verifyMessage({ address: wallet(2).address, message, signature: otherChain })).toBe(false);
    const counterfactualOtherChain = await signMessageAs(wallet(3), message, chainId + 1);
    expect(await rpc.verifyMessage({ address: wallet(3).address, message, signature: counterfactualOtherChain })).toBe(
      false,
    );
  });

  it('GIVEN a counterfactual signature WHEN its factory data deploys another wallet THEN it is refused', async () => {
    const message = 'counterfactual';
    const signature = await signMessageAs(wallet(3), message, chainId);
    const parsed = parseErc6492Signature(signature);
    expect(parsed.address).toBeDefined();
    // Wallet 6's deployment with wallet 3's inner signature, claimed for wallet 3.
    const six = await signMessageAs(wallet(6), message, chainId);
    const sixParts = parseErc6492Signature(six);
    const { serializeErc6492Signature } = await import('viem');
    const mixed = serializeErc6492Signature({
      address: sixParts.address ?? '0x',
      data: sixParts.data ?? '0x',
      signature: parsed.signature,
    });
    expect(await rpc.verifyMessage({ address: wallet(3).address, message, signature: mixed })).toBe(false);
  });

  it('GIVEN creation code other than the validator WHEN called THEN the devnet says it runs none', async () => {
    const response = await post(rpcUrl, {
      jsonrpc: '2.0',
      id: 1,
      method: 'eth_call',
      params: [{ data: '0x6080604052' }, 'latest'],
    });
    const body = (await response.json()) as { error?: { code: number; message: string } };
    expect(body.error?.code).toBe(-32000);
    expect(body.error?.message).toMatch(/universal signature validator/);
  });

  it('GIVEN a bad 65-byte EOA signature WHEN the validator runs THEN it reverts with its reason', async () => {
    const { encodeDeployData, erc6492SignatureValidatorAbi, erc6492SignatureValidatorByteCode } = await import('viem');
    const data = encodeDeployData({
      abi: erc6492SignatureValidatorAbi,
      bytecode: erc6492SignatureValidatorByteCode,
      args: [wallet(1).address, hashMessage('x'), `0x${'11'.repeat(64)}05`],
    });
    const response = await post(rpcUrl, { jsonrpc: '2.0', id: 1, method: 'eth_call', params: [{ data }, 'latest'] });
    const body = (await response.json()) as { error?: { code: number; message: string; data?: string } };
    expect(body.error?.code).toBe(3);
    expect(body.error?.message).toMatch(/invalid signature v value/);
    expect(body.error?.data).toMatch(/^0x08c379a0/);
  });
});
