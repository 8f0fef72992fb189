"""Attacks on the egress wall, run inside the sandbox and, as their control, outside it.

Each mode prints one line: what came back, or `error <kind>: <message>`.
"""

import socket
import ssl
import sys
import urllib.error
import urllib.request


def report(fn):
    try:
        print(fn())
    except Exception as err:  # the line is the result either way
        print(f"error {type(err).__name__}: {err}")


def read_until(sock, done, size):
    """Reads `size` bytes at a time until done(data) holds or the peer closes; the bytes."""
    data = b""
    while not done(data):
        chunk = sock.recv(size)
        if not chunk:
            break
        data += chunk
    return data


def first_line(sock):
    data = read_until(sock, lambda data: b"\r\n" in data, 4096)
    return data.split(b"\r\n")[0].decode(errors="replace")


def whole(sock):
    return read_until(sock, lambda data: False, 65536).decode(errors="replace")


def direct(host, port):
    """A TCP connection straight to host:port, and a request on it."""
    sock = socket.create_connection((host, int(port)), timeout=3)
    sock.sendall(b"GET /hello HTTP/1.1\r\nHost: direct.test\r\nConnection: close\r\n\r\n")
    return first_line(sock)


def dns(server, port):
    """A DNS query (for example.com, type A) over UDP to server:port."""
    query = bytes.fromhex("abcd01000001000000000000076578616d706c6503636f6d0000010001")
    family = socket.AF_INET6 if ":" in server else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_DGRAM)
    sock.settimeout(3)
    sock.sendto(query, (server, int(port)))
    data, _ = sock.recvfrom(512)
    return f"answer {len(data)} bytes"


def raw(proxy_host, proxy_port, payload):
    """Sends payload (with \\r\\n escapes) to the proxy; everything that comes back."""
    sock = socket.create_connection((proxy_host, int(proxy_port)), timeout=5)
    sock.sendall(payload.encode().decode("unicode_escape").encode("latin-1"))
    return whole(sock).replace("\r\n", " | ")


def sni(proxy_host, proxy_port, connect_host, port, server_name, cafile):
    """CONNECT connect_host:port through the proxy (or straight there when proxy_host is
    `-`), then TLS with server_name (none when `-`), then GET /hello."""
    if proxy_host == "-":
        sock = socket.create_connection(("127.0.0.1", int(port)), timeout=5)
    else:
        sock = socket.create_connection((proxy_host, int(proxy_port)), timeout=5)
        sock.sendall(f"CONNECT {connect_host}:{port} HTTP/1.1\r\nHost: {connect_host}:{port}\r\n\r\n".encode())
        head = read_until(sock, lambda data: b"\r\n\r\n" in data, 1)
        status = head.split(b"\r\n")[0].decode(errors="replace")
        if " 200 " not in status:
            return status
    context = ssl.create_default_context(cafile=cafile)
    if server_name == "-":  # no SNI at all
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        server_name = None
    tls = context.wrap_socket(sock, server_hostname=server_name)
    tls.sendall(f"GET /hello HTTP/1.1\r\nHost: {server_name or connect_host}\r\nConnection: close\r\n\r\n".encode())
    return whole(tls).splitlines()[-1]


def unix(path):
    """A request through a Unix socket to a host process that relays it."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(3)
    sock.connect(path)
    sock.sendall(b"GET /hello HTTP/1.1\r\nHost: relay.test\r\nConnection: close\r\n\r\n")
    return whole(sock).splitlines()[-1]


def fetch(url):
    """urllib through the proxy variables."""
    try:
        return urllib.request.urlopen(url, timeout=10).read().decode().strip()
    except urllib.error.HTTPError as err:
        return f"http {err.code}: {err.read().decode().strip()}"


def resolve(name):
    return socket.gethostbyname(name)


MODES = {"direct": direct, "dns": dns, "raw": raw, "sni": sni, "unix": unix, "fetch": fetch, "resolve": resolve}
report(lambda: MODES[sys.argv[1]](*sys.argv[2:]))
