import { describe, expect, it } from 'vitest';
import { renderPlain } from '../../../src/chat/console/render.ts';

describe('renderPlain', () => {
  it('GIVEN an alert that pings roles THEN the terminal says whom it would ping on Discord', () => {
    const { text } = renderPlain({ title: 'Listed: Cat #1', mentionRoles: ['112233445566778899'], footer: 'devnet' });
    expect(text.split('\n').slice(-2)).toEqual(['(on Discord: pings role 112233445566778899)', '— devnet']);
  });

  it('renders title, lines, fields, image and numbered buttons', () => {
    const { text, choices } = renderPlain({
      title: 'Floor of Cats',
      lines: [[{ bold: 'Floor: ' }, '1.5 ETH']],
      fields: [{ name: '1. Cat #1', value: '1.5 ETH' }],
      image: 'https://img.example/1.png',
      buttons: [
        [
          { label: 'Refresh', action: '/floor cats' },
          { label: 'Site', url: 'https://cats.example' },
        ],
      ],
      footer: 'Cats · devnet',
    });
    expect(text).toBe(
      [
        'Floor of Cats',
        '─────────────',
        'Floor: 1.5 ETH',
        '1. Cat #1:',
        '  1.5 ETH',
        'image: https://img.example/1.png',
        '  [1] Refresh',
        '  Site: https://cats.example/',
        '— Cats · devnet',
      ].join('\n'),
    );
    expect(choices).toEqual(['/floor cats']);
  });

  it('GIVEN numbered: false (an alert) THEN buttons show the command to type and no choices', () => {
    const { text, choices } = renderPlain(
      { title: 'Listed: Cat #1', buttons: [[{ label: 'Pause\u001b[2J', action: '/watch pause r1\u0007' }]] },
      { numbered: false },
    );
    expect(text.split('\n').at(-1)).toBe('  Pause: /watch pause r1');
    expect(choices).toEqual([]);
  });

  it('strips terminal escape sequences and drops unsafe links from untrusted text', () => {
    const { text } = renderPlain({
      title: 'Evil\u001b[2J\u001b]0;pwned\u0007 cat',
      lines: [[{ link: 'click', href: 'javascript:alert(1)' }]],
      image: 'file:///etc/passwd',
    });
    expect(text).not.toContain(String.fromCharCode(27));
    expect(text).not.toContain('javascript:');
    expect(text).not.toContain('file:');
  });
});
