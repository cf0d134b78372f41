"""Real projects nobody here wrote, for the tests: pinned sdists from PyPI, hash-checked.

Each sdist is downloaded once and unpacked under the repository's ``.cache/sdists``
(git-ignored), so reruns and CI reuse it. When PyPI cannot be reached the test that needs it
skips, and fails instead under CI (``CI`` set). A module of its own, not conftest, so that any
test folder imports it by this one name.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tarfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / ".cache" / "sdists"
SIMPLE_INDEX = "https://pypi.org/simple/{name}/"


@dataclass(frozen=True)
class Sdist:
    """A pinned sdist: its version, its sha256 as PyPI lists it, and, for a big one of which
    the tests want only some files, the file name ending of those (the rest is not unpacked)."""

    version: str
    sha256: str
    only: str | None = None


SDISTS = {
    "click": Sdist("8.1.7", "ca9853ad459e787e2192211578cc907e7594e294c7ccc834310722b41b9ca6de"),
    "toolz": Sdist("1.0.0", "2c86e3d9a04798ac556793bced838816296a2f085017664e4995cb40a1047a02"),
    # The notebooks of these projects' tests and examples (nbformat's own test notebooks:
    # v2, v3, every v4 minor, 4.99, no minor version, invalid ones).
    "nbformat": Sdist("5.11.1", "32d4521c68c6e7d5b29c76defaeed9f42ea733142b9b19f88277ce10390b9c4d"),
    "nbdime": Sdist("4.0.4", "8cd25ecfeeb5105d563237d7f64eb4748058fba9bba9ab3892a1ff61e177ce16"),
    "jupytext": Sdist("1.19.6", "ba1d143bb3751e054d3164376b148ee8fa74e1a860fc9411e1da93ff588b8a17"),
    "jupyterlab": Sdist(
        "4.6.6", "5f6fbb409158167aeefb5781d6f0b228e24b493cb6e6f1320fb5bc8897acc223", only=".ipynb"
    ),
}


def fetch_sdist(name: str) -> Path:
    """The unpacked sdist of ``name`` at its pinned version (downloaded once, then cached)."""
    sdist = SDISTS[name]
    unpacked = CACHE / f"{name}-{sdist.version}"
    if (unpacked / ".complete").is_file():
        return unpacked
    CACHE.mkdir(parents=True, exist_ok=True)
    filename = f"{name}-{sdist.version}.tar.gz"
    tarball = CACHE / filename
    if not tarball.is_file() or hashlib.sha256(tarball.read_bytes()).hexdigest() != sdist.sha256:
        data = _download(name, filename)
        digest = hashlib.sha256(data).hexdigest()
        assert digest == sdist.sha256, (
            f"{filename} from PyPI has sha256 {digest}, not {sdist.sha256}"
        )
        partial = tarball.with_suffix(".part")
        partial.write_bytes(data)
        partial.replace(tarball)
    shutil.rmtree(unpacked, ignore_errors=True)
    with tarfile.open(tarball) as archive:
        members = [
            member
            for member in archive.getmembers()
            if sdist.only is None or member.isfile() and member.name.endswith(sdist.only)
        ]
        if sys.version_info >= (3, 12):
            archive.extractall(CACHE, members=members, filter="data")
        else:
            archive.extractall(CACHE, members=members)  # a pinned, hash-checked archive
    (unpacked / ".complete").write_text("")
    return unpacked


def _download(name: str, filename: str) -> bytes:
    """The file ``filename`` of project ``name``, found through PyPI's simple index (JSON)."""
    try:
        request = urllib.request.Request(
            SIMPLE_INDEX.format(name=name),
            headers={"Accept": "application/vnd.pypi.simple.v1+json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            files = json.loads(response.read())["files"]
        url = next(f["url"] for f in files if f["filename"] == filename)
        with urllib.request.urlopen(url, timeout=120) as response:
            return bytes(response.read())
    except (urllib.error.URLError, TimeoutError, OSError) as e:
        message = f"PyPI could not be reached to fetch {filename} ({e})"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
