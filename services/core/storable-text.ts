// This path stays for the tests that import it; the code imports stored-bounds.ts.
export { cutText, storableJson, storableTextProblem } from './stored-bounds.js';
