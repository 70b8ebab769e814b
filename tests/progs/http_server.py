#!/usr/bin/env python3
"""HTTP/1.1 server for tests/e2e/test_db.c: serves CONNS connections, then exits.
usage: http_server.py PORTFILE CONNS [CERT KEY]  (with CERT and KEY: HTTPS)"""
import http.server
import ssl
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        if self.path.startswith("/items/"):
            self.reply(200, b"item " + self.path.encode() + b"\n" * 100)
        else:
            self.reply(404, b"not found\n")

    def do_HEAD(self):
        self.do_GET()

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)  # the request body: never recorded by libprof
        self.reply(201, b"created\n")

    def log_message(self, *args):
        pass


def main():
    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    if len(sys.argv) > 4:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[3], sys.argv[4])
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    for _ in range(int(sys.argv[2])):
        server.handle_request()
    server.server_close()


main()
