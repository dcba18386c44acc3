"""HTTP servers on 127.0.0.1 for the installer and wheel-source tests: a package index behind basic auth, one that
also serves each wheel's metadata apart (PEP 658/714) and JSON pages (PEP 691), and one that never answers."""

import base64
import html
import json
import os
import re
import socket
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


class AuthIndex:
    """A PEP 503 simple index of the wheels in ``dirs``, answering only requests with the right basic auth.

    ``requests`` lists (path, authorized) for every request seen.
    """

    def __init__(self, dirs, user=None, password=None):
        self.files = {}
        for directory in dirs:
            for name in sorted(os.listdir(str(directory))):
                if name.endswith(".whl"):
                    self.files[name] = os.path.join(str(directory), name)
        # no user: every request is authorized
        self.expected = "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode() if user else None
        self.requests = []
        self.server = None

    def __enter__(self):
        index = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                authorized = index.expected is None or self.headers.get("Authorization") == index.expected
                index.requests.append((self.path, authorized))
                if not authorized:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="test"')
                    self.end_headers()
                    return
                index.answer(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    @property
    def port(self):
        return self.server.server_address[1]

    def answer(self, handler):
        parts = [p for p in handler.path.split("?")[0].split("/") if p]
        if parts == ["simple"]:  # the root page: every project
            projects = sorted({_canonical(n.split("-")[0]) for n in self.files})
            links = "".join('<a href="/simple/%s/">%s</a>\n' % (p, p) for p in projects)
            body = ("<!DOCTYPE html><html><body>\n%s</body></html>\n" % links).encode()
            content_type = "text/html"
        elif len(parts) == 2 and parts[0] == "simple":
            project = _canonical(parts[1])
            links = "".join('<a href="/files/%s">%s</a>\n' % (html.escape(n), html.escape(n)) for n in self.files
                            if _canonical(n.split("-")[0]) == project)
            if not links:
                handler.send_error(404)
                return
            body = ("<!DOCTYPE html><html><body>\n%s</body></html>\n" % links).encode()
            content_type = "text/html"
        elif len(parts) == 2 and parts[0] == "files" and parts[1] in self.files:
            with open(self.files[parts[1]], "rb") as handle:
                body = handle.read()
            content_type = "application/octet-stream"
        else:
            handler.send_error(404)
            return
        handler.send_response(200)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)


class MetadataIndex(AuthIndex):
    """AuthIndex whose project pages mark each wheel's metadata as served apart (``data-core-metadata``, PEP 714)
    and answer ``FILE.metadata``; a page is JSON (PEP 691) when ``json`` is set and the request's Accept header
    names that first, else HTML (PEP 503)."""

    JSON = "application/vnd.pypi.simple.v1+json"

    def __init__(self, dirs, user=None, password=None, json=True):  # pylint: disable=redefined-outer-name
        super().__init__(dirs, user, password)
        self.json = json

    def answer(self, handler):
        parts = [p for p in handler.path.split("?")[0].split("/") if p]
        if len(parts) == 2 and parts[0] == "files" and parts[1].endswith(".metadata") and parts[1][:-9] in self.files:
            with zipfile.ZipFile(self.files[parts[1][:-9]]) as archive:
                body = archive.read(next(m for m in archive.namelist() if m.endswith(".dist-info/METADATA")))
            return self._send(handler, body, "text/plain")
        if len(parts) == 2 and parts[0] == "simple":
            project = _canonical(parts[1])
            names = [n for n in self.files if _canonical(n.split("-")[0]) == project]
            if not names:
                return handler.send_error(404)
            if self.json and (handler.headers.get("Accept") or "").startswith(self.JSON):
                body = json.dumps({"meta": {"api-version": "1.1"}, "name": project, "files": [
                    {"filename": n, "url": "../../files/%s" % n, "hashes": {}, "core-metadata": True} for n in names]})
                return self._send(handler, body.encode(), self.JSON)
            links = "".join('<a href="/files/%s" data-core-metadata="true">%s</a>\n' % (html.escape(n), html.escape(n))
                            for n in names)
            return self._send(handler, ("<!DOCTYPE html><html><body>\n%s</body></html>\n" % links).encode(), "text/html")
        return super().answer(handler)

    @staticmethod
    def _send(handler, body, content_type):
        handler.send_response(200)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)


class SilentServer:
    """Accepts TCP connections on 127.0.0.1 and never answers; records when each peer closes."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.accepted = 0
        self.closed = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.first = threading.Event()
        self.held = []

    @property
    def port(self):
        return self.sock.getsockname()[1]

    def __enter__(self):
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.sock.close()
        for conn in self.held:
            conn.close()

    def _accept(self):
        while not self.stop.is_set():
            try:
                conn, _addr = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.accepted += 1
                self.held.append(conn)
            self.first.set()
            threading.Thread(target=self._watch, args=(conn,), daemon=True).start()

    def _watch(self, conn):
        """Read (and drop) whatever the client sends until it closes the connection."""
        try:
            while conn.recv(4096):
                pass
        except OSError:
            pass
        with self.lock:
            self.closed += 1

    def all_closed(self):
        with self.lock:
            return self.accepted > 0 and self.closed == self.accepted
