/**
 * One schema per record type: what the values of a record must be once normalize.ts has read its
 * spellings (`image_data`, `chainID`, `null` for absent). Fields named here are checked (addresses
 * canonical, amounts whole and within uint256, decimals and prices sane); fields not named are text
 * or structure passed on as they came, and keys the types do not know pass through. A field that is
 * optional in the record may be absent, but never wrong.
 */
import * as v from 'valibot';
import { address, amount, bps, count, decimals, decimalText, text, tokenId, usdPrice } from './fields.ts';

const optional = v.exactOptional;

export const tokenMetadataSchema = v.looseObject({
  tokenId,
  name: text,
  attributes: v.array(v.looseObject({})),
  description: optional(text),
  image: optional(text),
  video: optional(text),
  audio: optional(text),
  imageData: optional(text),
  externalUrl: optional(text),
  backgroundColor: optional(text),
  animationUrl: optional(text),
  decimals: optional(decimals),
  chainId: optional(count),
  contractAddress: optional(address),
});

const feeEntry = v.looseObject({ recipientAddress: optional(address), bps: optional(bps) });

export const orderSchema = v.looseObject({
  orderId: v.pipe(text, v.minLength(1, 'expected an order id')),
  chainId: optional(count),
  collectionContractAddress: optional(address),
  tokenId: optional(tokenId),
  createdBy: address,
  priceAmount: amount,
  priceAmountFormatted: optional(decimalText),
  priceAmountNet: optional(amount),
  priceAmountNetFormatted: optional(decimalText),
  priceCurrencyAddress: address,
  priceDecimals: decimals,
  priceUSD: optional(usdPrice),
  quantityInitial: optional(amount),
  quantityInitialFormatted: optional(decimalText),
  quantityRemaining: optional(amount),
  quantityRemainingFormatted: optional(decimalText),
  quantityAvailable: optional(amount),
  quantityAvailableFormatted: optional(decimalText),
  quantityDecimals: optional(decimals),
  feeBps: optional(bps),
  feeBreakdown: v.array(feeEntry),
  blockNumber: optional(count),
  validFrom: optional(text),
  validUntil: optional(text),
});

export const collectibleOrderSchema = v.looseObject({
  metadata: tokenMetadataSchema,
  order: optional(orderSchema),
  listing: optional(orderSchema),
  offer: optional(orderSchema),
});

export const propertyFilterSchema = v.looseObject({
  name: text,
  type: text,
  values: v.array(v.unknown()),
});

export const contractInfoSchema = v.looseObject({
  address,
  chainId: optional(count),
  name: text,
  type: optional(text),
  symbol: optional(text),
  logoURI: optional(text),
  decimals: optional(decimals),
});

export const collectionSchema = v.looseObject({
  id: optional(count),
  projectId: optional(count),
  metadata: v.looseObject({ name: text }),
  private: v.boolean(),
});

export const tokenBalanceSchema = v.looseObject({
  contractAddress: address,
  accountAddress: address,
  balance: amount,
  tokenID: optional(tokenId),
  chainId: optional(count),
  blockNumber: optional(count),
  uniqueCollectibles: optional(amount),
  contractInfo: optional(contractInfoSchema),
  tokenMetadata: optional(tokenMetadataSchema),
});

export const contractSourceSchema = v.looseObject({ id: optional(count) });

export const contractSchema = v.looseObject({
  id: optional(count),
  contractAddress: address,
  chainId: optional(count),
  decimals: optional(decimals),
});

export const audienceSchema = v.looseObject({ id: optional(count), contactCount: optional(count) });

export const audienceContactSchema = v.looseObject({ address });

export const gasSponsorSchema = v.looseObject({ id: optional(count), address: optional(address) });

export const stepSchema = v.looseObject({ to: text, data: text, value: text, price: text });

/**
 * A stream log as the alert pipeline reads it: the contract that emitted it (matched against
 * watched collections) and its block (ordering, gaps, backfill). Its decoded values are checked by
 * the classifier, which reads each as its type says.
 */
export const eventLogSchema = v.looseObject({
  contractAddress: address,
  blockNumber: count,
  txnHash: text,
});

/** A stream receipt: its block orders finality and reorgs. */
export const receiptSchema = v.looseObject({ txnHash: text, blockNumber: count });
