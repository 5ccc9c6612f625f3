"""Fetch a release's sdist from PyPI through the simple API (PEP 691), verify it, cache it."""

from __future__ import annotations

import hashlib
import json
import os
import re
import urllib.error
import urllib.request
from pathlib import Path

from impasse.tasks.names import canonical, is_final, version_key

DEFAULT_INDEX = "https://pypi.org/simple"


def index_url() -> str:
    """PyPI's simple API, or a mirror of it (``$IMPASSE_PYPI_INDEX``)."""
    return os.environ.get("IMPASSE_PYPI_INDEX", DEFAULT_INDEX).rstrip("/")


class PackageError(RuntimeError):
    """A package cannot become a task image; the message says why and what to try."""


def fetch(url: str, accept: str | None = None) -> bytes:
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.read()
    except urllib.error.HTTPError as e:
        if e.code == 404:
            raise PackageError(f"{url}: not found on PyPI (check the package name)") from e
        raise PackageError(f"{url}: PyPI answered HTTP {e.code}; try again later") from e
    except (urllib.error.URLError, TimeoutError, OSError) as e:
        raise PackageError(f"cannot reach PyPI ({url}): {e}; check the network or use a cached build") from e


def resolve_sdist(name: str, version: str | None) -> tuple[str, str, str, str]:
    """-> (version, filename, url, sha256). Latest non-prerelease sdist if version is None."""
    data = json.loads(fetch(f"{index_url()}/{canonical(name)}/", "application/vnd.pypi.simple.v1+json"))
    sdists: dict[str, tuple[str, str, str]] = {}
    for f in data.get("files", []):
        fn = f["filename"]
        if not fn.endswith((".tar.gz", ".zip")) or f.get("yanked"):
            continue
        stem = fn.removesuffix(".tar.gz").removesuffix(".zip")
        name_rx = "[-_.]+".join(re.escape(part) for part in canonical(name).split("-"))
        m = re.match(rf"^{name_rx}-(.+)$", stem, re.IGNORECASE)
        if m:
            sdists[m.group(1)] = (fn, f["url"], f["hashes"].get("sha256", ""))
    if not sdists:
        raise PackageError(f"{name}: PyPI has no source distribution (sdist); impasse needs the sdist's tests")
    if version is None:
        finals = [v for v in sdists if is_final(v)] or list(sdists)
        version = max(finals, key=version_key)
    if version not in sdists:
        near = ", ".join(sorted(sdists, key=version_key)[-5:])
        raise PackageError(f"{name}=={version}: no sdist for this version (latest: {near})")
    return (version, *sdists[version])


def download_sdist(name: str, version: str | None, dest: Path) -> tuple[str, Path]:
    """-> (resolved version, path of the cached archive). A pinned version already in the cache
    needs no network at all; otherwise the download is verified against PyPI's sha256."""
    if version is not None and dest.is_dir():
        name_rx = "[-_.]+".join(re.escape(part) for part in canonical(name).split("-"))
        for cached in dest.iterdir():
            if re.fullmatch(rf"{name_rx}-{re.escape(version)}\.(tar\.gz|zip)", cached.name, re.IGNORECASE):
                return version, cached
    version, filename, url, sha = resolve_sdist(name, version)
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / filename
    if path.exists() and (not sha or hashlib.sha256(path.read_bytes()).hexdigest() == sha):
        return version, path
    blob = fetch(url)
    if sha and hashlib.sha256(blob).hexdigest() != sha:
        raise PackageError(f"{filename}: sha256 mismatch after download; try again")
    tmp = path.with_suffix(".part")
    tmp.write_bytes(blob)
    tmp.replace(path)
    return version, path
