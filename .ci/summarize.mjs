// The closing line of .ci/run, from vitest's JSON report: "N passed, N failed", where anything that did
// not pass counts as failed: failed tests, skipped and todo tests (a skipped test shows nothing), test
// files that failed outside their tests (a hook or an import threw: their tests show as skipped), errors
// vitest caught outside any test (the report has no count of them: when vitest failed and nothing above
// did, they count as one), and the production start path.
//
//   node .ci/summarize.mjs <report.json> <vitest exit status> <production path status>
// Prints what failed, then the closing line; exits 1 when anything failed.
import { existsSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';

const [reportPath = '', vitestStatus = '1', productionStatus = '1'] = process.argv.slice(2);
const productionOk = productionStatus === '0';
const problems = [];
let passed = productionOk ? 1 : 0;
let failed = productionOk ? 0 : 1;
if (!productionOk) problems.push('the production start path failed (see above)');

if (!existsSync(reportPath) || readFileSync(reportPath, 'utf8').trim() === '') {
  // Lint or typecheck failed before vitest ran, or vitest could not start.
  problems.push('no test report: lint, typecheck or vitest itself failed before the tests ran (see above)');
  failed += 1;
} else {
  const report = JSON.parse(readFileSync(reportPath, 'utf8'));
  passed += report.numPassedTests;
  const counted = [
    [report.numFailedTests, 'tests failed'],
    [report.numPendingTests, 'tests skipped'],
    [report.numTodoTests, 'tests marked todo'],
  ];
  const brokenFiles = report.testResults.filter(
    (file) => file.status === 'failed' && !file.assertionResults.some((test) => test.status === 'failed'),
  );
  counted.push([brokenFiles.length, 'test files failed outside their tests (a hook or an import threw)']);
  for (const [count, what] of counted) {
    if (count > 0) problems.push(`${count} ${what}`);
    failed += count;
  }
  for (const file of brokenFiles) {
    const message = String(file.message ?? '').split('\n')[0];
    problems.push(`  ${relative(process.cwd(), file.name)}: ${message.slice(0, 300)}`);
  }
  if (vitestStatus !== '0' && counted.every(([count]) => count === 0)) {
    problems.push('vitest failed with errors outside any test (unhandled errors: see its "Errors" line above)');
    failed += 1;
  }
}

if (problems.length > 0) console.log(`not passed:\n${problems.map((p) => `  ${p}`).join('\n')}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
