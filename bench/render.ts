/**
 * Re-renders `bench/results/latest.md` and `latest.svg` from `latest.json`, without measuring:
 * for a change to the report's layout. `npx tsx bench/render.ts [results directory]`.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { renderMarkdown } from './report/markdown';
import type { BenchResults } from './report/results';
import { renderSvg } from './report/svg';

const directory = resolve(process.argv[2] ?? join(__dirname, 'results'));
const results = JSON.parse(readFileSync(join(directory, 'latest.json'), 'utf8')) as BenchResults;
writeFileSync(
  join(directory, 'latest.md'),
  renderMarkdown(results, {
    svgPath: results.quick ? join(directory, 'latest.svg') : 'latest.svg',
  }),
);
writeFileSync(join(directory, 'latest.svg'), renderSvg(results));
process.stderr.write(`[bench] rendered ${join(directory, 'latest')}.{md,svg} from latest.json\n`);
