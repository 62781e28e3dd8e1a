import { describe, expect, it } from 'vitest';
import { parseStartPayload, startPayload } from '../../../src/chat/telegram/deep-link.ts';
import { checkInitData, dataCheckString, initDataHash } from '../../../src/chat/telegram/web-app.ts';
import { ConfigError, DEFAULT_WEB_PORT, loadConfig } from '../../../src/config.ts';
import { opensInApp } from '../../../src/core/reply.ts';
import { statementName } from '../../../src/roles/siwe.ts';

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env, '/srv/bot');
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('wallet verification settings', () => {
  it('GIVEN no public address THEN there is no page, and the listener settings are refused alone', () => {
    expect(loadConfig({}, '/srv/bot').verification).toEqual({
      publicUrl: undefined,
      web: { host: '127.0.0.1', port: DEFAULT_WEB_PORT },
    });
    expect(problemsOf({ FLOORWATCH_WEB_PORT: '9000' })).toEqual([
      expect.stringContaining('FLOORWATCH_PUBLIC_URL is not'),
    ]);
  });

  it('GIVEN a public address THEN it must be https (or http to this machine), without credentials, query or fragment', () => {
    const config = loadConfig(
      { FLOORWATCH_PUBLIC_URL: 'https://bot.example/fw', FLOORWATCH_WEB_PORT: '0', FLOORWATCH_WEB_HOST: '0.0.0.0' },
      '/srv/bot',
    );
    expect(config.verification.publicUrl?.href).toBe('https://bot.example/fw');
    expect(config.verification.web).toEqual({ host: '0.0.0.0', port: 0 });
    expect(
      loadConfig({ FLOORWATCH_PUBLIC_URL: 'http://127.0.0.1:8787' }, '/srv/bot').verification.publicUrl?.host,
    ).toBe('127.0.0.1:8787');
    expect(problemsOf({ FLOORWATCH_PUBLIC_URL: 'http://bot.example' })).toEqual([
      expect.stringContaining('must be an https:// address'),
    ]);
    expect(problemsOf({ FLOORWATCH_PUBLIC_URL: 'https://user:pw@bot.example' })).toEqual([
      expect.stringContaining('must not carry credentials'),
    ]);
    expect(problemsOf({ FLOORWATCH_PUBLIC_URL: 'bot.example' })).toEqual([expect.stringContaining('is not a URL')]);
    expect(problemsOf({ FLOORWATCH_PUBLIC_URL: 'https://bot.example', FLOORWATCH_WEB_HOST: 'a b' })).toEqual([
      expect.stringContaining('FLOORWATCH_WEB_HOST must be'),
    ]);
  });

  it('GIVEN addresses THEN only https and this machine open inside Telegram', () => {
    expect(opensInApp('https://bot.example/verify/x')).toBe(true);
    expect(opensInApp('http://127.0.0.1:8787/verify/x')).toBe(true);
    expect(opensInApp('http://localhost/verify/x')).toBe(true);
    expect(opensInApp('http://bot.example/verify/x')).toBe(false);
    expect(opensInApp('javascript:alert(1)')).toBe(false);
  });
});

describe('Telegram deep links and Mini App data', () => {
  it('GIVEN a command and a group THEN the payload carries both, within what Telegram allows', () => {
    expect(startPayload('verify', '-1001234567890')).toBe('verify_-1001234567890');
    expect(parseStartPayload('verify_-1001234567890')).toEqual({
      commandLine: '/verify',
      communityId: '-1001234567890',
    });
    expect(parseStartPayload(startPayload('verify list', '-5') ?? '')).toEqual({
      commandLine: '/verify list',
      communityId: '-5',
    });
    expect(startPayload('watch remove r1', '-5')).toBeUndefined();
    expect(startPayload('x'.repeat(60), '-1001234567890')).toBeUndefined();
    expect(parseStartPayload('something-else')).toBeUndefined();
  });

  it('GIVEN data signed with the token THEN it names its user; changed, repeated or old data names nobody', () => {
    const token = '123456:ABCDEFGHIJKLMNOPQRSTUVWXYZ';
    const now = new Date('2026-03-01T12:00:00Z');
    const fields = new URLSearchParams({
      auth_date: String(now.getTime() / 1000 - 60),
      query_id: 'AAE',
      user: JSON.stringify({ id: 42, first_name: 'A' }),
    });
    fields.set('hash', initDataHash(dataCheckString(fields) ?? '', token));
    const data = fields.toString();
    expect(checkInitData(data, token, now)).toMatchObject({ ok: true, userId: '42' });
    expect(checkInitData(data, '123456:another', now)).toEqual({ ok: false, reason: 'bad_hash' });
    expect(checkInitData(data.replace('query_id=AAE', 'query_id=AAF'), token, now)).toEqual({
      ok: false,
      reason: 'bad_hash',
    });
    expect(checkInitData(`${data}&user=x`, token, now)).toEqual({ ok: false, reason: 'malformed' });
    expect(checkInitData(data, token, new Date(now.getTime() + 2 * 60 * 60 * 1000))).toEqual({
      ok: false,
      reason: 'stale',
    });
    expect(checkInitData('', token, now)).toEqual({ ok: false, reason: 'malformed' });
  });
});

describe('statement names', () => {
  it('GIVEN an untrusted community name THEN the statement gets one clean line of it', () => {
    expect(statementName('Moon\nCats\u202e Club\u0007')).toBe('Moon Cats Club');
    expect(statementName('')).toBe('this community');
    expect(statementName('x'.repeat(100))).toBe(`${'x'.repeat(60)}…`);
  });
});
