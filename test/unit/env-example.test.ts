// .env.example is the list of settings a newcomer copies: it must name exactly the variables
// src/config.ts reads, give each a line of meaning, and show defaults that are the real ones.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const EXAMPLE = readFileSync(join(ROOT, '.env.example'), 'utf8').split('\n');
const VARIABLE_LINE = /^# ([A-Z][A-Z0-9_]*)=(.*)$/;
const VARIABLE_NAME = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$/;

/** `# NAME=default` lines of .env.example, in order. */
function exampleVariables(): Array<{ name: string; value: string; line: number }> {
  return EXAMPLE.flatMap((text, line) => {
    const match = VARIABLE_LINE.exec(text);
    return match ? [{ name: match[1] ?? '', value: match[2] ?? '', line }] : [];
  });
}

/** Every string literal in src/config.ts shaped like an environment variable's name (read from the syntax tree). */
function namesInConfigSource(): Set<string> {
  const path = join(ROOT, 'src', 'config.ts');
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.ES2022, true);
  const names = new Set<string>();
  const visit = (node: ts.Node) => {
    if (ts.isStringLiteral(node) && VARIABLE_NAME.test(node.text)) names.add(node.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return names;
}

/** The names loadConfig looks up in `env`, recorded as it runs. */
function namesRead(env: Record<string, string>): Set<string> {
  const read = new Set<string>();
  const recording = new Proxy(env, {
    get(target, key) {
      if (typeof key === 'string') read.add(key);
      return Reflect.get(target, key);
    },
  });
  try {
    loadConfig(recording, '/srv/bot');
  } catch {
    // A configuration with problems still reads its variables.
  }
  return read;
}

describe('.env.example', () => {
  it('names exactly the variables src/config.ts reads, each once', () => {
    const listed = exampleVariables().map((v) => v.name);
    expect(new Set(listed).size).toBe(listed.length);
    const inSource = namesInConfigSource();
    expect([...listed].sort()).toEqual([...inSource].sort());
    // Every name loadConfig looks up is one of those literals (none is built at run time), with an
    // empty environment and with one where every variable is set.
    const everySet = Object.fromEntries(listed.map((name) => [name, 'x']));
    for (const env of [{}, everySet]) {
      for (const name of namesRead(env)) expect(inSource).toContain(name);
    }
  });

  it('says what each variable means in a comment above it (or above its group)', () => {
    for (const { name, line } of exampleVariables()) {
      let above = line - 1;
      while (above >= 0 && VARIABLE_LINE.test(EXAMPLE[above] ?? '')) above--;
      const meaning = EXAMPLE[above] ?? '';
      expect(meaning, `${name} (line ${line + 1})`).toMatch(/^# \S.{9,}/);
      expect(meaning, `${name} (line ${line + 1})`).not.toMatch(/^# ---/);
    }
  });

  it('GIVEN every default it shows uncommented THEN the configuration is the same as with none set', () => {
    const defaults = Object.fromEntries(
      exampleVariables()
        .filter((v) => v.value !== '')
        .map((v) => [v.name, v.value]),
    );
    expect(Object.keys(defaults).length).toBeGreaterThan(10);
    expect(loadConfig(defaults, '/srv/bot')).toEqual(loadConfig({}, '/srv/bot'));
  });
});
