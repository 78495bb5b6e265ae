// pg-fencing loads as an ES module and as CommonJS, by its package name (the
// exports map), with every run-time export of index.d.ts present in both.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as esm from 'pg-fencing';
import esmDefault from 'pg-fencing';

const require = createRequire(import.meta.url);
const cjs = require('pg-fencing');
const dts = readFileSync(require.resolve('pg-fencing/package.json').replace(/package\.json$/, 'index.d.ts'), 'utf8');
const declared = [...dts.matchAll(/^export (?:declare )?(?:const|function|class) (\w+)/gm)].map((m) => m[1]);
let n = 0;
let failed = 0;
function report(ok, what) {
  n += 1;
  if (!ok) failed += 1;
  console.log(`${ok ? 'ok' : 'not ok'} ${n} - ${what}`);
}
const missingEsm = declared.filter((k) => esm[k] === undefined);
report(missingEsm.length === 0, `ESM: import { name } from 'pg-fencing' works for all ${declared.length} exports of index.d.ts`
  + (missingEsm.length ? ` (undefined: ${missingEsm.join(', ')})` : ''));
const missingCjs = declared.filter((k) => cjs[k] === undefined);
report(missingCjs.length === 0, `CommonJS: require('pg-fencing') has all ${declared.length} exports`
  + (missingCjs.length ? ` (undefined: ${missingCjs.join(', ')})` : ''));
const sameObjects = declared.every((k) => esm[k] === cjs[k]) && esmDefault === cjs;
report(sameObjects, 'ESM and CommonJS give the same objects (one Lease class: instanceof works across both)');
const extra = Object.keys(cjs).filter((k) => !declared.includes(k));
report(extra.length === 0, `every run-time export is declared in index.d.ts${extra.length ? ` (undeclared: ${extra.join(', ')})` : ''}`);
process.exit(failed ? 1 : 0);
