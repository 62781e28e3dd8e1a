import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandEngine } from '../../../src/bot/engine.ts';
import { IMAGES_BY_URL, imageHostsOf } from '../../../src/chat/images/images.ts';
import { OutcomeProbe } from '../../../src/chat/outcome-probe.ts';
import { GROUP, type Harness, MEMBER, OPERATOR, startHarness } from '../../helpers/bot-harness.ts';

describe('hosts the platform serves images from', () => {
  it('GIVEN the endpoint templates THEN their hosts with their ports, without the ones that are templates themselves', () => {
    expect(
      imageHostsOf([
        'http://127.0.0.1:8545/metadata',
        'http://127.0.0.1:8545/marketplace/{network}',
        'https://{network}-indexer.example.com',
        'https://api.example.com/rpc',
        'http://images.example.com/x',
        'http://[::1]:9000/rpc',
        'not a url',
      ]),
    ).toEqual(['127.0.0.1:8545', 'api.example.com:443', 'images.example.com:80', '[::1]:9000']);
  });

  it('GIVEN no drawing THEN every http(s) image goes by its address and nothing else is shown', async () => {
    expect(await IMAGES_BY_URL.show('https://cdn.example.com/1.svg')).toEqual({
      kind: 'url',
      url: 'https://cdn.example.com/1.svg',
    });
    expect(await IMAGES_BY_URL.show('javascript:alert(1)')).toBeUndefined();
    expect(await IMAGES_BY_URL.show(undefined)).toBeUndefined();
  });
});

describe('the outcome of a command run, for the adapter that ran it', () => {
  let h: Harness;
  let engine: CommandEngine;

  beforeAll(async () => {
    h = await startHarness();
    engine = h.engine;
  });

  afterAll(async () => {
    await h?.close();
  });

  it('GIVEN concurrent runs with different verdicts THEN each gets its own', async () => {
    const probe = new OutcomeProbe(engine);
    const runs = await Promise.all([
      probe.observe(() => engine.runLine('/unpublish 1', GROUP, MEMBER)),
      probe.observe(() => engine.runLine('/help', GROUP, MEMBER)),
      probe.observe(() => engine.runLine('/floor zzz-no-such-collection', GROUP, MEMBER)),
      probe.observe(() => engine.runLine('/unpublish 1', GROUP, MEMBER)),
      probe.observe(async () => 'no command'),
    ]);
    expect(runs.map((r) => r.outcome)).toEqual(['denied', 'ok', 'user_error', 'denied', undefined]);
    expect(runs[0]?.value?.tone).toBe('error');
    expect(runs[4]?.value).toBe('no command');
  });

  it('GIVEN an outcome reported outside any observed run THEN no run takes it', async () => {
    const probe = new OutcomeProbe(engine);
    const outside = engine.runLine('/unpublish 1', GROUP, MEMBER);
    const observed = await probe.observe(() => engine.runLine('/help', GROUP, OPERATOR));
    await outside;
    expect(observed.outcome).toBe('ok');
  });
});
