import { describe, expect, it } from 'vitest';
import { type AlertDetails, alertsFor, floorRelation, renderAlert } from '../../../src/alerts/render.ts';
import type { Destination } from '../../../src/core/types.ts';
import { chainEvent } from './fixtures.ts';

const event = chainEvent({ tokens: [{ tokenId: '7', amount: '1' }], blockNumber: 42 });
const details: AlertDetails = {
  event,
  collectionName: 'Moon Cats',
  tokens: [{ tokenId: '7', amount: '1', name: 'Moon Cat #7' }],
  price: { amount: '1.5', symbol: 'WDEV', usd: 3_675 },
};
const chat = (chatId: string): Destination => ({ platform: 'discord', chatId });

describe('alertsFor: one event, many chats', () => {
  it('GIVEN chats with and without roles THEN each gets the rendered alert, only role chats ping, and the event is rendered once', () => {
    const alerts = alertsFor(
      details,
      [
        { destination: chat('1'), roles: [] },
        { destination: chat('2'), roles: ['111111111111'] },
        { destination: chat('3'), roles: [] },
        { destination: chat('4'), roles: ['111111111111'] },
        { destination: chat('5'), roles: ['111111111111', '222222222222'] },
      ],
      (destination, reply) => ({ destination, reply }),
    );
    expect(alerts.map((a) => a.destination.chatId)).toEqual(['1', '2', '3', '4', '5']);
    const [a, b, c, d, e] = alerts.map((x) => x.reply);
    const { mentionRoles: _none, ...plain } = renderAlert(details);
    for (const reply of [a, b, c, d, e]) expect(reply).toMatchObject(plain);
    expect(a?.mentionRoles).toBeUndefined();
    expect(b?.mentionRoles).toEqual(['111111111111']);
    expect(e?.mentionRoles).toEqual(['111111111111', '222222222222']);
    // Shared objects: one for the chats without roles, one per role set.
    expect(c).toBe(a);
    expect(d).toBe(b);
    expect(e).not.toBe(b);
  });

  it('GIVEN no chats THEN nothing', () => {
    expect(alertsFor(details, [], () => 1)).toEqual([]);
  });
});

describe('alerts in market context', () => {
  const field = (reply: ReturnType<typeof renderAlert>, name: string) =>
    reply.fields?.find((f) => f.name === name)?.value;

  it('GIVEN prices per token against the floor THEN below, at, above and multiples read as people say them', () => {
    expect(floorRelation(37, 100)).toBe('63% below floor');
    expect(floorRelation(99.8, 100)).toBe('at floor');
    expect(floorRelation(112, 100)).toBe('12% above floor');
    expect(floorRelation(210, 100)).toBe('2.1× floor');
    expect(floorRelation(0.01, 100)).toBe('99% below floor');
    expect(floorRelation(123_456, 100)).toBe('1,235× floor');
  });

  it('GIVEN a sale with a known floor and a recorded last sale THEN the alert shows the floor and how the price compares, and the last sale with how long before', () => {
    const reply = renderAlert({
      ...details,
      event: { ...event, ts: '2026-11-21T15:00:00Z' },
      floorUsd: 9_931,
      lastSale: { at: '2026-11-18T14:00:00Z', usd: 2_940 },
    });
    expect(field(reply, 'Price')).toBe('1.5 WDEV ($3,675.00)');
    expect(field(reply, 'Floor')).toBe('$9,931.00 · 63% below floor');
    expect(field(reply, 'Last sale')).toBe('$2,940.00, 3 days earlier');
    const unpriced = renderAlert({ ...details, lastSale: { at: '2026-11-21T14:59:30Z' } });
    expect(field(unpriced, 'Last sale')).toBe('moments earlier (price unknown)');
  });

  it('GIVEN a sweep THEN the floor is compared per token; GIVEN a listing THEN it is compared too but has no last sale', () => {
    const sweep = renderAlert({
      ...details,
      event: {
        ...event,
        tokens: [
          { tokenId: '7', amount: '1' },
          { tokenId: '8', amount: '1' },
        ],
      },
      tokens: [
        { tokenId: '7', amount: '1' },
        { tokenId: '8', amount: '1' },
      ],
      price: { amount: '3', symbol: 'WDEV', usd: 400 },
      floorUsd: 100,
    });
    expect(field(sweep, 'Floor')).toBe('$100.00 · 2.0× floor per token');
    const listing = renderAlert({
      ...details,
      event: { ...event, kind: 'listing' },
      floorUsd: 3_500,
      lastSale: { at: '2026-11-20T00:00:00Z', usd: 1 },
    });
    expect(field(listing, 'Floor')).toBe('$3,500.00 · 5% above floor');
    expect(field(listing, 'Last sale')).toBeUndefined();
    // A transfer has no price to compare; without a floor there is nothing to compare with.
    expect(field(renderAlert({ ...details, event: { ...event, kind: 'transfer' }, floorUsd: 1 }), 'Floor')).toBe(
      undefined,
    );
    expect(field(renderAlert(details), 'Floor')).toBeUndefined();
  });
});
