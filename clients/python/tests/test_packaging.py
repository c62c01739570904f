import pathlib
import subprocess
import sys
import tempfile
import tomllib
import unittest

import memorychat

PROJECT = pathlib.Path(__file__).resolve().parent.parent


class PackagingTest(unittest.TestCase):
    def test_when_pip_installs_the_project_with_no_package_index_then_it_imports_from_site_packages(self) -> None:
        version = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
        self.assertEqual(memorychat.__version__, version)
        with tempfile.TemporaryDirectory() as scratch:
            venv = pathlib.Path(scratch) / "venv"
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            # --no-index: nothing may be downloaded, as on a machine without PyPI.
            installed = subprocess.run(
                [str(venv / "bin" / "pip"), "install", "--no-index", "--no-cache-dir", str(PROJECT)],
                capture_output=True,
                text=True,
            )
            self.assertEqual(installed.returncode, 0, installed.stdout + installed.stderr)
            imported = subprocess.run(
                [str(venv / "bin" / "python"), "-c", "import memorychat; print(memorychat.__version__, memorychat.__file__)"],
                capture_output=True,
                text=True,
                cwd=scratch,
                check=True,
            )
            found_version, found_at = imported.stdout.split()
            self.assertEqual(found_version, version)
            self.assertIn("site-packages", found_at)
