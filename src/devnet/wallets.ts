/**
 * The local platform's test wallets: deterministic keys, labelled TEST ONLY, so that tests and the
 * demo can sign. Never send anything of value to them: their private keys are in this file's
 * derivation, which is public.
 *
 * Three kinds, as the platform's own users have them:
 * - `eoa`: a plain key; its signature is checked by recovering the address.
 * - `contract`: a smart-contract wallet deployed on every devnet network. Its ERC-1271
 *   `isValidSignature(bytes32 hash, bytes signature)` answers the magic value 0x1626ba7e when
 *   `signature` is its owner key's signature of the replay-safe digest
 *   `keccak256(abi.encode(hash, wallet, chainId))` (so that one owner's signature for one wallet
 *   and chain proves nothing for another), else 0xffffffff.
 * - `counterfactual`: the same wallet not deployed yet. Its address is the CREATE2 address the
 *   devnet's wallet factory would deploy it at (`createAccount(owner, salt)`); it signs per
 *   ERC-6492: `abi.encode(factory, createAccount calldata, inner signature) ++ 0x6492…6492`.
 *
 * The devnet's chain answers `eth_call` for these wallets and for ERC-6492's deployless universal
 * validator (the creation code viem sends without a `to`), with that contract's behaviour
 * ({@link simulateCall}); it runs no other contract code.
 */
import {
  type Address,
  concat,
  decodeAbiParameters,
  decodeFunctionData,
  encodeAbiParameters,
  encodeErrorResult,
  encodeFunctionData,
  encodeFunctionResult,
  erc6492SignatureValidatorByteCode,
  getContractAddress,
  type Hex,
  hashMessage,
  isHex,
  keccak256,
  parseAbi,
  recoverAddress,
  serializeErc6492Signature,
  size,
  slice,
  stringToHex,
  toHex,
} from 'viem';
import { privateKeyToAccount, sign } from 'viem/accounts';

/** ERC-6492's suffix of a counterfactual signature (32 bytes of 0x6492). */
const ERC6492_SUFFIX: Hex = `0x${'6492'.repeat(16)}`;

/** How many test wallets the devnet has (numbered from 1). */
export const TEST_WALLET_COUNT = 6;

export type TestWalletKind = 'eoa' | 'contract' | 'counterfactual';

export interface TestWallet {
  /** 1-based, as `npm run devnet -- sign --wallet <n>` takes it. */
  index: number;
  kind: TestWalletKind;
  /** Lower-case address. */
  address: Address;
  /** The key that signs for it (the wallet's own for an EOA, its owner's for a contract wallet). TEST ONLY. */
  privateKey: Hex;
  /** The owner key's address. */
  owner: Address;
  /** CREATE2 salt of a contract wallet. */
  salt?: Hex;
}

const KINDS: readonly TestWalletKind[] = ['eoa', 'contract', 'counterfactual'];

/** The wallet factory: the same address on every devnet network, like a CREATE2-deployed factory. */
export const WALLET_FACTORY = `0x${keccak256(stringToHex('floorwatch devnet wallet factory')).slice(-40)}` as Address;

/** Stand-in for the wallet's creation code: its hash with the owner decides the CREATE2 address. */
const WALLET_INIT_CODE = stringToHex('floorwatch devnet smart wallet v1');

const walletAbi = parseAbi(['function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)']);
const factoryAbi = parseAbi(['function createAccount(address owner, bytes32 salt) returns (address)']);
const validatorErrors = parseAbi([
  'error ERC6492DeployFailed(bytes reason)',
  'error ERC1271Revert(bytes reason)',
  'error Error(string message)',
]);

export const ERC1271_MAGIC: Hex = '0x1626ba7e';
const ERC1271_REFUSED: Hex = '0xffffffff';

/** The test key of wallet `index`: a public derivation, TEST ONLY. */
function testKey(index: number): Hex {
  return keccak256(stringToHex(`floorwatch devnet test wallet ${index}: TEST ONLY, public key material`));
}

function lower(address: string): Address {
  return address.toLowerCase() as Address;
}

/** The counterfactual address of the wallet `owner` gets from the factory with `salt`. */
export function walletAddressOf(owner: Address, salt: Hex): Address {
  const bytecodeHash = keccak256(concat([WALLET_INIT_CODE, encodeAbiParameters([{ type: 'address' }], [owner])]));
  return lower(getContractAddress({ opcode: 'CREATE2', from: WALLET_FACTORY, salt, bytecodeHash }));
}

function buildWallets(): TestWallet[] {
  const wallets: TestWallet[] = [];
  for (let index = 1; index <= TEST_WALLET_COUNT; index++) {
    const kind = KINDS[(index - 1) % KINDS.length] as TestWalletKind;
    const privateKey = testKey(index);
    const owner = lower(privateKeyToAccount(privateKey).address);
    if (kind === 'eoa') {
      wallets.push({ index, kind, address: owner, privateKey, owner });
      continue;
    }
    const salt = toHex(index, { size: 32 });
    wallets.push({ index, kind, address: walletAddressOf(owner, salt), privateKey, owner, salt });
  }
  return wallets;
}

/** The devnet's test wallets, by index from 1. TEST ONLY. */
export const TEST_WALLETS: readonly TestWallet[] = buildWallets();

/** A test wallet by its 1-based index or its address. */
export function testWallet(ref: number | string): TestWallet | undefined {
  if (typeof ref === 'number') return TEST_WALLETS[ref - 1];
  const address = ref.toLowerCase();
  return TEST_WALLETS.find((wallet) => wallet.address === address);
}

/** The digest a contract wallet's owner signs for `hash` (see the module comment). */
export function walletDigest(wallet: Address, hash: Hex, chainId: number): Hex {
  return keccak256(
    encodeAbiParameters(
      [{ type: 'bytes32' }, { type: 'address' }, { type: 'uint256' }],
      [hash, wallet, BigInt(chainId)],
    ),
  );
}

/** The factory calldata that deploys a contract wallet. */
export function deployCalldata(wallet: TestWallet): Hex {
  if (!wallet.salt) throw new Error(`test wallet ${wallet.index} is not a contract wallet`);
  return encodeFunctionData({ abi: factoryAbi, functionName: 'createAccount', args: [wallet.owner, wallet.salt] });
}

/**
 * Signs `message` (EIP-191 personal_sign) as a test wallet: the key's own signature for an EOA, the
 * owner's signature of the wallet digest for a deployed contract wallet, and that wrapped per
 * ERC-6492 for a counterfactual one. `chainId` matters for contract wallets only.
 */
export async function signMessageAs(wallet: TestWallet, message: string, chainId: number): Promise<Hex> {
  if (wallet.kind === 'eoa') return privateKeyToAccount(wallet.privateKey).signMessage({ message });
  const inner = await sign({
    hash: walletDigest(wallet.address, hashMessage(message), chainId),
    privateKey: wallet.privateKey,
    to: 'hex',
  });
  if (wallet.kind === 'contract') return inner;
  return serializeErc6492Signature({ address: WALLET_FACTORY, data: deployCalldata(wallet), signature: inner });
}

/** The outcome of an `eth_call`: the returned data, or a revert with its data. */
export type CallOutcome = { ok: true; data: Hex } | { ok: false; data: Hex; reason: string };

/** Thrown for a call the devnet cannot run (code other than its wallets' and the validator's). */
export class UnsupportedCallError extends Error {
  override name = 'UnsupportedCallError';
}

/** The contracts deployed on the devnet's chains (the same on every network), by lower-case address. */
function deployedContracts(): Map<string, TestWallet | 'factory'> {
  const deployed = new Map<string, TestWallet | 'factory'>([[WALLET_FACTORY, 'factory']]);
  for (const wallet of TEST_WALLETS) if (wallet.kind === 'contract') deployed.set(wallet.address, wallet);
  return deployed;
}
const DEPLOYED = deployedContracts();

/** A fake runtime bytecode for `eth_getCode`: an EIP-1167 minimal proxy to a label-derived implementation. */
export function codeAt(address: string): Hex {
  const contract = DEPLOYED.get(address.toLowerCase());
  if (!contract) return '0x';
  const implementation = keccak256(stringToHex(contract === 'factory' ? 'factory' : 'wallet')).slice(-40);
  return `0x363d3d373d3d3d363d73${implementation}5af43d82803e903d91602b57fd5bf3`;
}

/** One execution of `eth_call` against a devnet chain, with the contracts a call deploys on its way. */
class Execution {
  readonly #chainId: number;
  readonly #created = new Map<string, TestWallet>();

  constructor(chainId: number) {
    this.#chainId = chainId;
  }

  #contract(address: string): TestWallet | 'factory' | undefined {
    const key = address.toLowerCase();
    return DEPLOYED.get(key) ?? this.#created.get(key);
  }

  /** A message call to `to`. */
  async call(to: Address, data: Hex): Promise<CallOutcome> {
    const contract = this.#contract(to);
    // A call to an account without code succeeds and returns nothing.
    if (!contract) return { ok: true, data: '0x' };
    if (contract === 'factory') return this.#factory(data);
    return this.#wallet(contract, data);
  }

  #factory(data: Hex): CallOutcome {
    let owner: Address;
    let salt: Hex;
    try {
      const decoded = decodeFunctionData({ abi: factoryAbi, data });
      [owner, salt] = decoded.args;
    } catch {
      return { ok: false, data: '0x', reason: 'execution reverted' };
    }
    const address = walletAddressOf(lower(owner), salt);
    const wallet = TEST_WALLETS.find((w) => w.address === address) ?? {
      index: 0,
      kind: 'contract' as const,
      address,
      privateKey: '0x' as Hex,
      owner: lower(owner),
      salt,
    };
    if (!DEPLOYED.has(address)) this.#created.set(address, { ...wallet, kind: 'contract' });
    return {
      ok: true,
      data: encodeFunctionResult({ abi: factoryAbi, functionName: 'createAccount', result: address }),
    };
  }

  async #wallet(wallet: TestWallet, data: Hex): Promise<CallOutcome> {
    let hash: Hex;
    let signature: Hex;
    try {
      const decoded = decodeFunctionData({ abi: walletAbi, data });
      [hash, signature] = decoded.args;
    } catch {
      return { ok: false, data: '0x', reason: 'execution reverted' };
    }
    const magic = (await this.#ownerSigned(wallet, hash, signature)) ? ERC1271_MAGIC : ERC1271_REFUSED;
    return {
      ok: true,
      data: encodeFunctionResult({ abi: walletAbi, functionName: 'isValidSignature', result: magic }),
    };
  }

  async #ownerSigned(wallet: TestWallet, hash: Hex, signature: Hex): Promise<boolean> {
    if (size(signature) !== 65) return false;
    return (await ecrecover(walletDigest(wallet.address, hash, this.#chainId), signature)) === wallet.owner;
  }

  /**
   * ERC-6492's `ValidateSigOffchain` constructor, as viem's deployless verification runs it: the
   * reference `isValidSigImpl(signer, hash, signature)` (counterfactual suffix first, deploying
   * through the factory when the signer has no code; then ERC-1271 when the signer is a contract
   * or counterfactual; else ecrecover of a 65-byte signature with v 27 or 28), returning one byte,
   * 0x01 or 0x00, or reverting as the contract does.
   */
  async validate(signer: Address, hash: Hex, signature: Hex): Promise<CallOutcome> {
    const hasCode = this.#contract(signer) !== undefined;
    let toValidate = signature;
    const counterfactual = size(signature) >= 32 && slice(signature, size(signature) - 32) === ERC6492_SUFFIX;
    if (counterfactual) {
      let factory: Address;
      let calldata: Hex;
      try {
        [factory, calldata, toValidate] = decodeAbiParameters(
          [{ type: 'address' }, { type: 'bytes' }, { type: 'bytes' }],
          slice(signature, 0, size(signature) - 32),
        );
      } catch {
        return { ok: false, data: '0x', reason: 'execution reverted' };
      }
      if (!hasCode) {
        const deployed = await this.call(lower(factory), calldata);
        if (!deployed.ok) {
          const data = encodeErrorResult({
            abi: validatorErrors,
            errorName: 'ERC6492DeployFailed',
            args: [deployed.data],
          });
          return { ok: false, data, reason: 'execution reverted' };
        }
      }
    }
    if (counterfactual || hasCode) {
      const contract = this.#contract(signer);
      // Solidity refuses a high-level call to an account without code: the constructor reverts.
      if (contract === undefined) return { ok: false, data: '0x', reason: 'execution reverted' };
      const answer = await this.call(
        signer,
        encodeFunctionData({ abi: walletAbi, functionName: 'isValidSignature', args: [hash, toValidate] }),
      );
      if (!answer.ok) {
        const data = encodeErrorResult({ abi: validatorErrors, errorName: 'ERC1271Revert', args: [answer.data] });
        return { ok: false, data, reason: 'execution reverted' };
      }
      if (size(answer.data) < 32) return { ok: false, data: '0x', reason: 'execution reverted' };
      return { ok: true, data: slice(answer.data, 0, 4) === ERC1271_MAGIC ? '0x01' : '0x00' };
    }
    if (size(signature) !== 65) {
      return revertWith('SignatureValidator#recoverSigner: invalid signature length');
    }
    const v = Number.parseInt(signature.slice(-2), 16);
    if (v !== 27 && v !== 28) return revertWith('SignatureValidator: invalid signature v value');
    return { ok: true, data: (await ecrecover(hash, signature)) === lower(signer) ? '0x01' : '0x00' };
  }
}

function revertWith(message: string): CallOutcome {
  return {
    ok: false,
    data: encodeErrorResult({ abi: validatorErrors, errorName: 'Error', args: [message] }),
    reason: `execution reverted: ${message}`,
  };
}

/** The precompile's answer: the signer's address, or the zero address for a signature that recovers none. */
async function ecrecover(hash: Hex, signature: Hex): Promise<Address> {
  try {
    return lower(await recoverAddress({ hash, signature }));
  } catch {
    return '0x0000000000000000000000000000000000000000';
  }
}

/**
 * Runs an `eth_call` on a devnet chain: a call to a contract wallet or the factory, or (no `to`)
 * the creation code of ERC-6492's universal validator. Throws {@link UnsupportedCallError} for
 * any other creation code: the devnet runs no general EVM.
 */
export async function simulateCall(chainId: number, to: Address | undefined, data: Hex): Promise<CallOutcome> {
  const execution = new Execution(chainId);
  if (to !== undefined) return execution.call(to, data);
  if (!data.toLowerCase().startsWith(erc6492SignatureValidatorByteCode.toLowerCase())) {
    throw new UnsupportedCallError(
      "the devnet's chain runs no contract creation code but ERC-6492's universal signature validator",
    );
  }
  let signer: Address;
  let hash: Hex;
  let signature: Hex;
  try {
    [signer, hash, signature] = decodeAbiParameters(
      [{ type: 'address' }, { type: 'bytes32' }, { type: 'bytes' }],
      `0x${data.slice(erc6492SignatureValidatorByteCode.length)}`,
    );
  } catch {
    return { ok: false, data: '0x', reason: 'execution reverted' };
  }
  return execution.validate(lower(signer), hash, signature);
}

/** Whether a text is `0x` hex of whole bytes. */
export function isByteHex(value: unknown): value is Hex {
  return typeof value === 'string' && isHex(value, { strict: true }) && value.length % 2 === 0;
}
