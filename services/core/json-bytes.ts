// This path stays for the tests that import it; the code imports stored-bounds.ts.
export { jsonBytesWithin, nestedDeeperThan } from './stored-bounds.js';
