import { describe, expect, it } from 'vitest';
import { FloodGate } from '../../../src/bot/rate-limit.ts';

const PERSON = { capacity: 3, refillPerSecond: 0.5 };
const CHAT = { capacity: 5, refillPerSecond: 1 };

function flood(gate: FloodGate, user: string, chat: string, count: number, nowMs: number): string[] {
  return Array.from({ length: count }, () => gate.admit(user, chat, nowMs).status);
}

describe('FloodGate', () => {
  it('GIVEN a burst from one person THEN the capacity is admitted, the next refusal told, the rest silent', () => {
    const gate = new FloodGate(PERSON, CHAT);
    expect(flood(gate, 'u1', 'c1', 10, 0)).toEqual([
      'ok',
      'ok',
      'ok',
      'notify',
      'silent',
      'silent',
      'silent',
      'silent',
      'silent',
      'silent',
    ]);
  });

  it('GIVEN a person told to slow down THEN they are told again only after their bucket had a token', () => {
    const gate = new FloodGate(PERSON, CHAT);
    flood(gate, 'u1', 'c1', 5, 0);
    // Half a token back: still the same window.
    expect(gate.admit('u1', 'c1', 1_000).status).toBe('silent');
    // A token back: admitted, and the window is over.
    expect(gate.admit('u1', 'c1', 2_000).status).toBe('ok');
    expect(gate.admit('u1', 'c1', 2_000)).toEqual({ status: 'notify', waitMs: 2_000 });
    expect(gate.admit('u1', 'c1', 2_000).status).toBe('silent');
  });

  it('GIVEN one person flooding THEN another person in another chat is not affected', () => {
    const gate = new FloodGate(PERSON, CHAT);
    flood(gate, 'u1', 'c1', 20, 0);
    expect(gate.admit('u2', 'c2', 0).status).toBe('ok');
  });

  it('GIVEN many people in one chat THEN the chat bucket refuses, told once for the whole chat', () => {
    const gate = new FloodGate(PERSON, CHAT);
    const statuses = Array.from({ length: 9 }, (_, i) => gate.admit(`u${i}`, 'group', 0).status);
    expect(statuses).toEqual(['ok', 'ok', 'ok', 'ok', 'ok', 'notify', 'silent', 'silent', 'silent']);
    // Refused by the chat, the person kept their own tokens.
    expect(flood(gate, 'u8', 'private-u8', 3, 0)).toEqual(['ok', 'ok', 'ok']);
  });

  it('GIVEN the wait announced THEN it is the time until both buckets have a token', () => {
    const gate = new FloodGate({ capacity: 1, refillPerSecond: 0.1 }, CHAT);
    gate.admit('u1', 'c1', 0);
    expect(gate.admit('u1', 'c1', 0)).toEqual({ status: 'notify', waitMs: 10_000 });
  });
});
