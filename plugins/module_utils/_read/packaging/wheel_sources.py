# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The user's wheel sources, and what they offer: for a few distribution names, each version and its Requires-Dist.

Private to the gpuops.cuda_venv collection: not a public API.

``WheelSources`` is pip's find-links and index options as the modules take them (the repair installs from them,
the facts read them). ``read_offers`` reads only the sources given, never pip.conf's index nor PyPI:
- a local find-links folder, a wheel file or a ``file://`` URL: the ``*.whl`` names, and each wheel's METADATA
  read from its zip directory (the wheel is not extracted);
- an index (``index_url``, ``extra_index_urls``): the simple API page of each name
  (https://packaging.python.org/en/latest/specifications/simple-repository-api/), JSON (PEP 691) or HTML
  (PEP 503), and a file's metadata only where the index serves it apart (PEP 658/714, ``FILE.metadata``);
- an ``http(s)`` find-links page: its wheel links, metadata the same way.
A whole wheel is never downloaded. What only reading needs (open_url, the parsers) is imported when sources are read:
importing this file costs the facts of a venv without residue nothing. Every request goes through ``ansible.module_utils.urls.open_url`` (proxies,
certificates and netrc as the node configures them) with a timeout; a source that fails is named in
``SourceReading.failures`` with the reason, credentials masked, and the others are still read.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple
from urllib.error import HTTPError
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import canonical_name
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.redact import redact
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.venv_paths import local_path
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.requirements import version_order

TIMEOUT = 10.0  # seconds per request
MAX_VERSIONS = 16  # per name and remote source, newest first: one metadata request each
_ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl$", re.IGNORECASE)


class WheelSourcesError(CudaVenvError):
    """Wheel sources that contradict each other."""


@dataclass(frozen=True)
class WheelSources:
    """Where wheels come from: pip's find-links and index options."""

    find_links: tuple = ()
    index_url: Optional[str] = None
    extra_index_urls: tuple = ()
    no_index: bool = False

    def __post_init__(self):
        object.__setattr__(self, "find_links", as_strings(self.find_links))
        object.__setattr__(self, "extra_index_urls", as_strings(self.extra_index_urls))
        if self.no_index and (self.index_url or self.extra_index_urls):
            raise WheelSourcesError("wheel sources set no_index together with index_url or extra_index_urls: keep one of them")

    def secrets(self) -> tuple:
        """The credential-bearing strings of these sources (userinfo, passwords, tokens)."""
        found = []
        for url in (self.index_url,) + self.extra_index_urls + self.find_links:
            found.extend(_url_secrets(url or ""))
        return tuple(dict.fromkeys(found))

    def indexes(self) -> tuple:
        """The index URLs given (none with no_index)."""
        return () if self.no_index else tuple(u for u in (self.index_url,) + self.extra_index_urls if u)


def as_strings(value) -> tuple:
    """``value`` (None, a string or an iterable) as a tuple of strings."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


def local_wheel_files(folders: Sequence[str]) -> List[str]:
    """The ``*.whl`` files of local find-links entries (folders, or wheel files themselves), in name order per folder;
    a folder that cannot be listed is passed over."""
    files = []
    for folder in folders:
        if folder.endswith(".whl") and os.path.isfile(folder):
            files.append(folder)
            continue
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        files.extend(os.path.join(folder, n) for n in names if n.endswith(".whl"))
    return files


def _url_secrets(url: str) -> list:
    netloc = urlsplit(url).netloc if "://" in url else ""
    if "@" not in netloc:
        return []
    userinfo = netloc.rpartition("@")[0]
    user, has_password, password = userinfo.partition(":")
    # With a password the user name is not secret; alone it is usually a token.
    parts = [userinfo, password] if has_password else [userinfo, user]
    return [s for p in parts if p for s in (p, unquote(p))]


@dataclass(frozen=True)
class Offer:
    """One version of a distribution a source offers, with its Requires-Dist (None: the source does not tell)."""

    name: str  # canonical
    version: str
    source: str  # a find-links entry as configured (credentials masked), or "index HOST" (_index_label)
    requires: Optional[Tuple[str, ...]]


@dataclass(frozen=True)
class SourceReading:
    """What the sources offer for the names asked; ``failures``: (source, reason) for each source that failed."""

    offers: Tuple[Offer, ...] = ()
    failures: Tuple[Tuple[str, str], ...] = ()


def read_offers(sources: WheelSources, names: Iterable[str], timeout: float = TIMEOUT,
                opener: Optional[Callable] = None) -> SourceReading:
    """Every version of ``names`` the configured ``sources`` offer, with its Requires-Dist (http(s) sources: the
    newest MAX_VERSIONS of each name). ``opener``: default ``open_url``, imported here, when sources are read."""
    wanted = {canonical_name(n) for n in names}
    offers: List[Offer] = []
    failures: List[Tuple[str, str]] = []
    secrets = sources.secrets()
    if not wanted:
        return SourceReading()
    if opener is None:
        from ansible.module_utils.urls import open_url as opener  # pylint: disable=import-outside-toplevel
    for link in sources.find_links:
        label = redact(link, secrets)
        try:
            local = _local_path(link)
            if local is not None:
                offers += _local_offers(local, label, wanted)
            else:
                client = _Client(opener, timeout, link)
                offers += _page_offers(client, _fetch(client, link, html_only=True), label, wanted, None)
        except (OSError, ValueError) as exc:
            failures.append((label, redact(_reason(exc), secrets)))
    for index in sources.indexes():
        label, client = _index_label(index), _Client(opener, timeout, index)
        for name in sorted(wanted):
            try:
                page = _fetch(client, index.rstrip("/") + "/" + name + "/")
                offers += _page_offers(client, page, label, {name}, name)
            except _NotFound:
                continue
            except (OSError, ValueError) as exc:
                failures.append((label, redact(_reason(exc), secrets)))
                break
    return SourceReading(tuple(offers), tuple(failures))


def _index_label(url: str) -> str:
    """An index as results name it: "index HOST[:PORT]". Not the URL: index options are no_log, and Ansible masks
    each one's whole value wherever it appears in a result."""
    parts = urlsplit(url)
    return "index %s" % (parts.netloc.rpartition("@")[2] or url)


def _local_path(link: str) -> Optional[str]:
    """``local_path``'s answer, None only for an http(s) page: any other URL cannot be read."""
    local = local_path(link)
    if local is None and urlsplit(link).scheme not in ("http", "https"):
        raise ValueError("not a folder, a file:// or an http(s) URL")
    return local


def _local_offers(path: str, label: str, wanted: set) -> List[Offer]:
    import zipfile  # pylint: disable=import-outside-toplevel
    files = [path] if os.path.isfile(path) else [os.path.join(path, f) for f in sorted(os.listdir(path))]
    seen, found = set(), []
    for file in files:
        parsed = _wheel_name(os.path.basename(file))
        if parsed is None or parsed[0] not in wanted or parsed in seen:
            continue
        seen.add(parsed)
        try:
            with zipfile.ZipFile(file) as archive:
                member = next((m for m in archive.namelist() if m.count("/") == 1 and m.endswith(".dist-info/METADATA")), None)
                requires = _requires(archive.read(member)) if member else None
        except zipfile.BadZipFile as exc:
            raise ValueError("%s: %s" % (file, exc)) from None
        found.append(Offer(parsed[0], parsed[1], label, requires))
    return found


def _wheel_name(filename: str) -> Optional[Tuple[str, str]]:
    match = _WHEEL.match(filename)
    return (canonical_name(match.group("name")), match.group("version")) if match else None


def _requires(metadata: bytes) -> Tuple[str, ...]:
    from email.parser import BytesHeaderParser  # pylint: disable=import-outside-toplevel
    headers = BytesHeaderParser().parsebytes(metadata)
    return tuple(str(r).strip() for r in headers.get_all("Requires-Dist") or ())


class _NotFound(Exception):
    """The index has no page for this name (404)."""


@dataclass(frozen=True)
class _Page:
    url: str
    files: Tuple[Tuple[str, str, bool], ...]  # (filename, absolute url, whether its metadata is served apart)


class _Client:
    """GET through ``opener`` with a timeout; the source URL's credentials go with every request to its host (as
    pip sends them: a page's file links carry none), to no other host."""

    def __init__(self, opener, timeout: float, source: str):
        parts = urlsplit(source)
        self.opener, self.timeout, self.host = opener, timeout, (parts.hostname, parts.port)
        self.auth = {}
        if parts.username is not None:
            self.auth = dict(url_username=unquote(parts.username), url_password=unquote(parts.password or ""),
                             force_basic_auth=True)

    def get(self, url: str, accept: Optional[str] = None):
        parts = urlsplit(url)
        extra = {"headers": {"Accept": accept}} if accept else {}
        if self.auth and (parts.hostname, parts.port) == self.host:
            extra.update(self.auth)
            url = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
        return self.opener(url, timeout=self.timeout, follow_redirects="safe", **extra)


def _fetch(client: _Client, url: str, html_only: bool = False) -> _Page:
    try:
        response = client.get(url, "text/html" if html_only else _ACCEPT)
    except HTTPError as exc:
        if exc.code == 404 and not html_only:
            raise _NotFound() from None
        raise OSError("HTTP %d %s from %s" % (exc.code, exc.reason, url)) from None
    body = response.read()
    final = response.geturl() if hasattr(response, "geturl") else url
    kind = (response.headers.get("Content-Type") or "").split(";")[0].strip()
    if kind == "application/vnd.pypi.simple.v1+json":
        return _Page(final, _json_files(final, json.loads(body.decode("utf-8"))))
    return _Page(final, _html_files(final, body.decode("utf-8", "replace")))


def _json_files(base: str, data: dict) -> tuple:
    files = []
    for item in data.get("files", []):
        served = item.get("core-metadata", item.get("dist-info-metadata", False))
        files.append((item["filename"], urljoin(base, item["url"]), bool(served)))
    return tuple(files)


def _html_files(base: str, text: str) -> tuple:
    from html.parser import HTMLParser  # pylint: disable=import-outside-toplevel
    links = []

    class Links(HTMLParser):
        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag == "a" and attrs.get("href"):
                served = attrs.get("data-core-metadata", attrs.get("data-dist-info-metadata"))
                links.append((attrs["href"], served is not None and served != "false"))

    Links().feed(text)
    files = []
    for href, served in links:
        url = urljoin(base, href)
        files.append((unquote(urlsplit(url).path.rsplit("/", 1)[-1]), url, served))
    return tuple(files)


def _page_offers(client: _Client, page: _Page, label: str, wanted: set, name: Optional[str]) -> List[Offer]:
    """The newest MAX_VERSIONS versions of each wanted name on ``page``, metadata read where it is served apart."""
    by_version: Dict[Tuple[str, str], Tuple[str, bool]] = {}
    for filename, url, served in page.files:
        parsed = _wheel_name(filename)
        if parsed is None or parsed[0] not in wanted or (name is not None and parsed[0] != name):
            continue
        if parsed not in by_version or (served and not by_version[parsed][1]):
            by_version[parsed] = (url, served)
    found = []
    for parsed in _newest(by_version):
        url, served = by_version[parsed]
        requires = None
        if served:
            requires = _requires(client.get(urldefrag(url)[0] + ".metadata").read())
        found.append(Offer(parsed[0], parsed[1], label, requires))
    return found


def _newest(by_version: dict) -> list:
    """The newest MAX_VERSIONS (name, version) of each name."""
    ordered = []
    for name in sorted({p[0] for p in by_version}):
        ordered += sorted((p for p in by_version if p[0] == name), key=lambda p: version_order(p[1]),
                          reverse=True)[:MAX_VERSIONS]
    return ordered


def _reason(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
