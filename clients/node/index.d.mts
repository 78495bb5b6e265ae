// Type declarations for pg-fencing as an ES module (index.mjs): the same as index.d.ts.
export * from './index.js';
import * as fencing from './index.js';
export default fencing;
