// `postinstall`: creates the embedded database's template cluster for the installed PGlite
// (services/db/embedded/cluster-template.mjs), so that a first `npm start` copies it instead of
// running initdb. Never fails the install: without a template, a new data directory runs initdb.
// Plain JavaScript, run from the sources before anything is built.
import { createClusterTemplate } from '../../services/db/embedded/cluster-template.mjs';

try {
  const started = performance.now();
  const template = await createClusterTemplate();
  console.log(`memorychat: embedded database template ready in ${Math.round(performance.now() - started)} ms (${template})`);
} catch (err) {
  console.warn(`memorychat: no embedded database template (${err.message}); a new DATA_DIR will run initdb at its first start`);
}
