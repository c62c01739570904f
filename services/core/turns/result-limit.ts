// This path stays for the tests that import it; the code imports ../stored-bounds.ts.
export { limitStoredResult } from '../stored-bounds.js';
