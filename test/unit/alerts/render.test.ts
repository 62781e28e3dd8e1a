import { describe, expect, it } from 'vitest';
import { type AlertDetails, alertsFor, renderAlert } from '../../../src/alerts/render.ts';
import type { Destination } from '../../../src/alerts/types.ts';
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
