"""
A PEP 517 build backend for this client, with the standard library only (PEP 517's in-tree backends,
`backend-path`), so that `pip install clients/python` needs no download: pip would otherwise fetch
setuptools and wheel into an isolated build environment, which fails offline.

It builds what the package is: the pure-Python `memorychat/` (a `py3-none-any` wheel), its metadata
from pyproject.toml, and an sdist of the project. `build_editable` (PEP 660) installs a path to the
sources instead, for `pip install -e`.
"""

from __future__ import annotations

import base64
import hashlib
import io
import pathlib
import tarfile
import tomllib
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = "memorychat"
# Fixed times, so the same sources build the same bytes.
EPOCH = (1980, 1, 1, 0, 0, 0)


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _dist_name(project: dict) -> str:
    return f"{project['name'].replace('-', '_')}-{project['version']}"


def _metadata(project: dict) -> str:
    readme = (ROOT / project["readme"]).read_text(encoding="utf-8")
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {project['name']}\n"
        f"Version: {project['version']}\n"
        f"Summary: {project['description']}\n"
        f"Requires-Python: {project['requires-python']}\n"
        "Description-Content-Type: text/markdown\n"
        f"\n{readme}"
    )


def _wheel(wheel_directory: str, files: dict[str, bytes]) -> str:
    """Writes `files` and the dist-info (METADATA, WHEEL, RECORD with each file's sha256 and size)."""
    project = _project()
    name = _dist_name(project)
    info = f"{name}.dist-info"
    files = {
        **files,
        f"{info}/METADATA": _metadata(project).encode("utf-8"),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: memorychat_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [f"{path},sha256={_digest(data)},{len(data)}" for path, data in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode("utf-8")
    filename = f"{name}-py3-none-any.whl"
    with zipfile.ZipFile(pathlib.Path(wheel_directory) / filename, "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in files.items():
            wheel.writestr(zipfile.ZipInfo(path, EPOCH), data, zipfile.ZIP_DEFLATED)
    return filename


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


def _sources() -> dict[str, bytes]:
    return {path.relative_to(ROOT).as_posix(): path.read_bytes() for path in sorted((ROOT / PACKAGE).glob("*.py"))}


# --- the PEP 517 / PEP 660 hooks ------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings=None) -> list[str]:
    return []


def get_requires_for_build_editable(config_settings=None) -> list[str]:
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None) -> str:
    return _wheel(wheel_directory, _sources())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None) -> str:
    # A .pth file puts this project on sys.path: the package is imported from the sources as they change.
    return _wheel(wheel_directory, {f"__editable__.{PACKAGE}.pth": f"{ROOT}\n".encode("utf-8")})


def build_sdist(sdist_directory, config_settings=None) -> str:
    project = _project()
    name = _dist_name(project)
    members = {
        "pyproject.toml": (ROOT / "pyproject.toml").read_bytes(),
        project["readme"]: (ROOT / project["readme"]).read_bytes(),
        "build_backend/memorychat_build.py": pathlib.Path(__file__).read_bytes(),
        "PKG-INFO": _metadata(project).encode("utf-8"),
        **_sources(),
    }
    filename = f"{name}.tar.gz"
    with tarfile.open(pathlib.Path(sdist_directory) / filename, "w:gz", format=tarfile.PAX_FORMAT) as sdist:
        for path, data in members.items():
            entry = tarfile.TarInfo(f"{name}/{path}")
            entry.size = len(data)
            entry.mode = 0o644
            sdist.addfile(entry, io.BytesIO(data))
    return filename
