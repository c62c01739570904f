// This path stays for the tests that import it; the code imports lexical-terms.ts.
export { sqlIdentifiers } from './lexical-terms.js';
