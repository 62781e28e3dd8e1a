// Run as `node --import tsx render-and-leave.ts`, as the bot runs: draws one chart in a ChartPool and
// never closes it. The process must still end.
import { ChartPool } from '../../../src/digests/chart-pool.ts';

const pool = new ChartPool({ size: 1 });
const png = await pool.render('Left open', [
  { name: 'Series', points: [{ label: '2026-11-21', value: 1 }], format: String, color: '#5aa9ff' },
]);
console.log(`rendered ${png.length} bytes with ${pool.threads} thread`);
