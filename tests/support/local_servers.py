"""HTTP servers on 127.0.0.1 for the installer tests: a package index behind basic auth, and one that never answers."""

import base64
import html
import os
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


class AuthIndex:
    """A PEP 503 simple index of the wheels in ``dirs``, answering only requests with the right basic auth.

    ``requests`` lists (path, authorized) for every request seen.
    """

    def __init__(self, dirs, user, password):
        self.files = {}
        for directory in dirs:
            for name in sorted(os.listdir(str(directory))):
                if name.endswith(".whl"):
                    self.files[name] = os.path.join(str(directory), name)
        self.expected = "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        self.requests = []
        self.server = None

    def __enter__(self):
        index = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                authorized = self.headers.get("Authorization") == index.expected
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
