// .ci/run's closing line (.ci/summarize.mjs): whatever did not pass counts as failed, so a run whose
// test files could not start (the embedded PostgreSQL refused, an import threw) never ends "0 failed".
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'floorwatch-ci-summary-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface FileResult {
  name: string;
  status: 'passed' | 'failed';
  message: string;
  assertionResults: Array<{ status: 'passed' | 'failed' | 'pending' | 'todo' }>;
}

function summarize(
  report: { files: FileResult[] } | undefined,
  vitestStatus: number,
  productionStatus: number,
): { lines: string[]; code: number | null } {
  const path = join(dir, `report-${Math.random().toString(36).slice(2)}.json`);
  if (report) {
    const tests = report.files.flatMap((f) => f.assertionResults);
    const count = (status: string) => tests.filter((t) => t.status === status).length;
    writeFileSync(
      path,
      JSON.stringify({
        numTotalTestSuites: report.files.length,
        numFailedTestSuites: report.files.filter((f) => f.status === 'failed').length,
        numPassedTests: count('passed'),
        numFailedTests: count('failed'),
        numPendingTests: count('pending'),
        numTodoTests: count('todo'),
        success: vitestStatus === 0,
        testResults: report.files,
      }),
    );
  }
  const run = spawnSync(process.execPath, ['.ci/summarize.mjs', path, String(vitestStatus), String(productionStatus)], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  return { lines: run.stdout.trim().split('\n'), code: run.status };
}

const passing: FileResult = {
  name: join(ROOT, 'test/unit/a.test.ts'),
  status: 'passed',
  message: '',
  assertionResults: [{ status: 'passed' }, { status: 'passed' }],
};

describe('the closing line of .ci/run', () => {
  it('GIVEN every test passed and the production path ran THEN "N passed, 0 failed" and exit 0', () => {
    expect(summarize({ files: [passing] }, 0, 0)).toEqual({ lines: ['3 passed, 0 failed'], code: 0 });
  });

  it('GIVEN a file whose hook threw (its tests skipped), a skipped and a todo test THEN each counts as failed, the file is named, exit 1', () => {
    const hookFailed: FileResult = {
      name: join(ROOT, 'test/integration/db.test.ts'),
      status: 'failed',
      message: 'spawn initdb EACCES\n    at ...',
      assertionResults: [{ status: 'pending' }, { status: 'pending' }],
    };
    const skipping: FileResult = { ...passing, assertionResults: [{ status: 'pending' }, { status: 'todo' }] };
    const { lines, code } = summarize({ files: [passing, hookFailed, skipping] }, 1, 0);
    expect(code).toBe(1);
    expect(lines.at(-1)).toBe('3 passed, 5 failed');
    expect(lines).toContain('    test/integration/db.test.ts: spawn initdb EACCES');
  });

  it('GIVEN vitest failed with nothing failed in its report (an error outside tests) THEN one failure, exit 1', () => {
    const { lines, code } = summarize({ files: [passing] }, 1, 0);
    expect(lines.at(-1)).toBe('3 passed, 1 failed');
    expect(code).toBe(1);
  });

  it('GIVEN no report (lint or typecheck failed) and a failed production path THEN "0 passed, 2 failed"', () => {
    expect(summarize(undefined, 1, 1)).toMatchObject({ code: 1 });
    expect(summarize(undefined, 1, 1).lines.at(-1)).toBe('0 passed, 2 failed');
  });
});
