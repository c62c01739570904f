"""`python3 -m tests`: the unittest suite against a running service, closing with 'N passed, N failed'."""

import json
import os
import sys
import unittest

suite = unittest.defaultTestLoader.discover("tests", top_level_dir=".")
result = unittest.TextTestRunner(verbosity=2).run(suite)
failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
skipped = len(result.skipped)
passed = result.testsRun - failed - skipped
print(f"{passed} passed, {failed} failed, {skipped} skipped")
# CI folds these counts into the test suite's closing line (test/support/vitest/totals-reporter.ts).
if os.environ.get("EXTRA_TOTALS_FILE"):
    with open(os.environ["EXTRA_TOTALS_FILE"], "w", encoding="utf-8") as out:
        json.dump({"python": {"passed": passed, "failed": failed, "skipped": skipped}}, out)
sys.exit(1 if failed or result.testsRun == 0 else 0)
