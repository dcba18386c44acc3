"""Open a report page in headless Chromium as a person would, and read the DOM it rendered."""

import os
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


def chromium():
    """The chromium executable; the test fails (not skips) without it: `make scenarios` installs it."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("headless Chromium is needed to look at the report: apt-get install chromium (make scenarios does)")


def _argv(profile, *args):
    # --no-sandbox: the tests run as root in a container; --disable-gpu: no display here; a profile of its own.
    return [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            "--user-data-dir=%s" % profile] + list(args)


def dump_dom(path, profile):
    """The DOM Chromium built from the file, serialised."""
    proc = subprocess.run(_argv(profile, "--dump-dom", "file://" + str(path)),
                          capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0 and "<html" in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


def screenshot(path, dest, profile, size="1600,2400"):
    """A PNG of the page as Chromium draws it."""
    proc = subprocess.run(_argv(profile, "--window-size=" + size, "--screenshot=" + str(dest),
                                "file://" + str(path)), capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0 and os.path.getsize(dest) > 10000, proc.stderr[-2000:]


class Element:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children, self.texts = tag, dict(attrs), parent, [], []

    @property
    def classes(self):
        return set((self.attrs.get("class") or "").split())

    def text(self):
        """All the text inside, joined by single spaces."""
        parts = list(self.texts)
        for child in self.children:
            parts.append(child.text())
        return " ".join(" ".join(p.split()) for p in parts if p.strip())

    def iter(self):
        yield self
        for child in self.children:
            yield from child.iter()

    def find_all(self, tag=None, classes=()):
        return [e for e in self.iter() if (tag is None or e.tag == tag) and set(classes) <= e.classes]


class _Builder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = self.current = Element("#document", {}, None)

    def handle_starttag(self, tag, attrs):
        element = Element(tag, attrs, self.current)
        self.current.children.append(element)
        if tag not in VOID:
            self.current = element

    def handle_startendtag(self, tag, attrs):
        self.current.children.append(Element(tag, attrs, self.current))

    def handle_endtag(self, tag):
        node = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data):
        self.current.texts.append(data)


def parse(html):
    builder = _Builder()
    builder.feed(html)
    return builder.root
