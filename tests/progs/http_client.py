#!/usr/bin/env python3
"""Known HTTP requests for tests/e2e/test_db.c, on 3 connections:
keep-alive: GET /items/1 /items/2 /items/3 (200), GET /missing (404), POST /items (201),
HEAD /items/9 (200); then GET /items/4?q=secret (200) and GET /nothere/x (404), one
connection each. usage: http_client.py PORT [CAFILE]  (with CAFILE: HTTPS)"""
import http.client
import ssl
import sys

port = int(sys.argv[1])
ctx = ssl.create_default_context(cafile=sys.argv[2]) if len(sys.argv) > 2 else None


def connect():
    if ctx:
        return http.client.HTTPSConnection("localhost", port, context=ctx)
    return http.client.HTTPConnection("127.0.0.1", port)


def get(c, method, path, body=None):
    c.request(method, path, body=body)
    r = c.getresponse()
    r.read()
    print(method, path, r.status)


c = connect()
for path in ["/items/1", "/items/2", "/items/3", "/missing"]:
    get(c, "GET", path)
get(c, "POST", "/items", body=b"name=secret-body")
get(c, "HEAD", "/items/9")
c.close()
for path in ["/items/4?q=secret", "/nothere/x"]:
    c = connect()
    get(c, "GET", path)
    c.close()
