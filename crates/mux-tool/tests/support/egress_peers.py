"""Local peers for the egress proxy's tests: one HTTP server answering as several sites.

Usage: egress_peers.py DIR [CERT KEY]  -- serves (over TLS with CERT and KEY) on 0.0.0.0 (IPv4) and prints the port; DIR holds what
it serves and a log of every request (requests.log: "Host path" lines).

Paths:
  /hello                 -> "hello from <Host header>"
  /git/<repo>/...        -> git's smart HTTP protocol (git http-backend as CGI) for DIR/git
  /npm/...               -> an npm registry stub for the package in DIR/npm
  /simple/...            -> a PEP 503 simple index for the wheels in DIR/wheels
  /blob                  -> 100 MB of zeros (benchmarks), or DIR/blob-size bytes
"""

import hashlib
import http.server
import json
import os
import socketserver
import subprocess
import sys
import threading

ROOT = sys.argv[1]
LOG = os.path.join(ROOT, "requests.log")
LOCK = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self):
        with LOCK, open(LOG, "a") as log:
            log.write(f"{self.headers.get('Host', '-')} {self.path}\n")

    def send(self, status, body, kind="text/plain"):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.record()
        host = self.headers.get("Host", "-").split(":")[0]
        path = self.path.split("?")[0]
        if path == "/hello":
            return self.send(200, f"hello from {host}\n".encode())
        if path.startswith("/git/"):
            return self.git()
        if path.startswith("/npm/"):
            return self.npm(path[len("/npm/"):])
        if path.startswith("/simple/") or path.startswith("/wheels/"):
            return self.pypi(path)
        if path == "/blob":
            size = 100 * 1024 * 1024
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            chunk = b"\0" * (1 << 20)
            for _ in range(size >> 20):
                self.wfile.write(chunk)
            return None
        return self.send(404, b"not found\n")

    def do_POST(self):
        self.record()
        if self.path.startswith("/git/"):
            return self.git()
        return self.send(404, b"not found\n")

    def git(self):
        path, _, query = self.path[len("/git"):].partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        env = {
            "GIT_PROJECT_ROOT": os.path.join(ROOT, "git"),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            "PATH": os.environ.get("PATH", ""),
        }
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.split(b"\r\n"):
            name, _, value = line.decode().partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def npm(self, rest):
        base = f"http://{self.headers['Host']}/npm"
        folder = os.path.join(ROOT, "npm")
        for tarball in os.listdir(folder):
            name, version = tarball[: -len(".tgz")].rsplit("-", 1)
            data = open(os.path.join(folder, tarball), "rb").read()
            if rest == name:
                meta = {
                    "name": name,
                    "dist-tags": {"latest": version},
                    "versions": {
                        version: {
                            "name": name,
                            "version": version,
                            "dist": {
                                "tarball": f"{base}/{name}/-/{tarball}",
                                "shasum": hashlib.sha1(data).hexdigest(),
                            },
                        }
                    },
                }
                return self.send(200, json.dumps(meta).encode(), "application/json")
            if rest == f"{name}/-/{tarball}":
                return self.send(200, data, "application/octet-stream")
        return self.send(404, b"{}", "application/json")

    def pypi(self, path):
        folder = os.path.join(ROOT, "wheels")
        wheels = sorted(os.listdir(folder))
        if path.startswith("/wheels/") and path[len("/wheels/"):] in wheels:
            data = open(os.path.join(folder, path[len("/wheels/"):]), "rb").read()
            return self.send(200, data, "application/octet-stream")
        project = path[len("/simple/"):].strip("/")
        links = [
            f'<a href="/wheels/{w}#sha256={hashlib.sha256(open(os.path.join(folder, w), "rb").read()).hexdigest()}">{w}</a>'
            for w in wheels
            if w.split("-")[0].lower().replace("_", "-") == project
        ]
        if not links:
            return self.send(404, b"not found\n")
        page = "<!DOCTYPE html><html><body>" + "".join(links) + "</body></html>"
        return self.send(200, page.encode(), "text/html")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


server = Server(("0.0.0.0", 0), Handler)
if len(sys.argv) > 3:
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[2], sys.argv[3])
    server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
