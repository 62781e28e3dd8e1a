/**
 * What a sent alert is edited to say: that its transaction was reorganised away (without the link to
 * a transaction page that no longer exists), or what became of the listing a listing alert shows
 * (sold, cancelled, expired, or listed again when the sale was reversed). The original card stays
 * (token, price, image), with the new state at the top; a listing that can no longer be bought loses
 * its Buy link. Pure: the same record gives the same message, so that an edit made again after a
 * restart changes nothing.
 */
import { type DeliveryRecord, type ListingFate, type ListingWatch, payloadOf } from '../core/deliveries.ts';
import type { Inline, Reply, ReplyField, Rich } from '../core/reply.ts';
import { shortAddress } from '../market/format.ts';
import { decodePayload } from './sink.ts';

/** The message a sent delivery shows now: reversed, its listing's fate, or as it was sent. */
export function currentReply(record: DeliveryRecord): Reply {
  const original = decodePayload(payloadOf(record));
  if (record.reorged) {
    const buyUrl = record.listing?.buyUrl;
    return renderReorged(
      withoutLinks(
        original,
        (href) => linksTransaction(href, record.txnHash) || (buyUrl !== undefined && href === buyUrl),
      ),
    );
  }
  if (record.fate) return renderFate(original, record.fate, record.listing);
  return original;
}

/** The edit of an alert whose transaction was reorganised away: it did not happen. */
export function renderReorged(original: Reply): Reply {
  return {
    ...original,
    title: `Reversed: ${original.title ?? 'event'}`,
    tone: 'warning',
    lines: ['This transaction was dropped by a chain reorganisation: it did not happen.', ...(original.lines ?? [])],
    mentionRoles: [],
  };
}

const STATES: Record<Exclude<ListingFate['state'], 'listed'>, string> = {
  sold: 'SOLD',
  cancelled: 'CANCELLED',
  expired: 'EXPIRED',
};

/** A listing card edited to show its listing's fate (see the module comment). */
export function renderFate(original: Reply, fate: ListingFate, listing: ListingWatch | undefined): Reply {
  const buyUrl = listing?.buyUrl;
  if (fate.state === 'listed') {
    // The sale or cancel that closed it did not happen: the listing stands, Buy link and all.
    return {
      ...original,
      lines: [
        `A sale or cancel seen in transaction ${shortAddress(fate.reversed)} was reversed by a chain reorganisation: the listing stands.`,
        ...(original.lines ?? []),
      ],
      mentionRoles: [],
    };
  }
  const card = withoutLinks(original, (href) => href === buyUrl);
  const line: Inline[] = [];
  switch (fate.state) {
    case 'sold': {
      // Through the listing's own order it paid the listing's price (a sweep's total is no one card's price).
      const own = fate.orderIds?.some((id) => listing?.orderIds.includes(id)) === true;
      const price = own ? (listing?.price ?? fate.price) : fate.price;
      line.push(price ? `Sold for ${price}` : 'Sold');
      if (fate.buyer) line.push(' to ', { code: shortAddress(fate.buyer) });
      break;
    }
    case 'cancelled':
      line.push('The seller cancelled this listing');
      break;
    case 'expired':
      line.push(`This listing expired${expiredAt(fate.at)}`);
      break;
  }
  if (fate.state !== 'expired' && fate.transaction) line.push(' · ', { link: 'Transaction', href: fate.transaction });
  return {
    ...card,
    title: `${STATES[fate.state]} · ${original.title ?? 'listing'}`,
    tone: fate.state === 'sold' ? 'sale' : 'info',
    lines: [line, ...(card.lines ?? [])],
    mentionRoles: [],
  };
}

function expiredAt(at: string): string {
  const when = new Date(at);
  return Number.isNaN(when.getTime()) ? '' : ` (seen ${when.toISOString().slice(0, 16).replace('T', ' ')} UTC)`;
}

/** Whether a link leads to the page of this transaction (any explorer puts the hash in its address). */
function linksTransaction(href: string, txnHash: string): boolean {
  return txnHash.length > 0 && href.toLowerCase().includes(txnHash.toLowerCase());
}

/**
 * The reply without the links (in its lines and fields) and link buttons that `drop` names; a field
 * left with no text goes, and so does a separator left at either end.
 */
export function withoutLinks(reply: Reply, drop: (href: string) => boolean): Reply {
  const clean = (rich: Rich): Rich => {
    if (typeof rich === 'string') return rich;
    const kept = rich.filter((piece) => typeof piece === 'string' || !('href' in piece) || !drop(piece.href));
    if (kept.length === rich.length) return rich;
    const out = kept.filter((piece, i) => {
      const separator = typeof piece === 'string' && piece.trim() === '·';
      if (!separator) return true;
      const before = kept.slice(0, i).some((p) => typeof p !== 'string' || p.trim() !== '·');
      const next = kept[i + 1];
      const after = next !== undefined && (typeof next !== 'string' || next.trim() !== '·');
      return before && after;
    });
    return out;
  };
  const empty = (rich: Rich) => (typeof rich === 'string' ? rich.trim() === '' : rich.length === 0);
  const fields: ReplyField[] | undefined = reply.fields
    ?.map((field) => ({ ...field, value: clean(field.value) }))
    .filter((field) => !empty(field.value));
  const lines = reply.lines?.map(clean);
  const buttons = reply.buttons
    ?.map((row) => row.filter((button) => button.url === undefined || !drop(button.url)))
    .filter((row) => row.length > 0);
  return {
    ...reply,
    ...(fields ? { fields } : {}),
    ...(lines ? { lines } : {}),
    ...(buttons ? { buttons } : {}),
  };
}
