#!/usr/bin/env python3
"""openapi_check.py -- validates deploy/openapi.json against a running
baton (test_openapi.sh), with the standard library only.

  openapi_check.py DOC BASE_URL OPERATE_TOKEN READ_TOKEN JOB SRC_DIR

Every operation of the document is called (its example body) and must
answer a status the document lists, with a body of that status's schema;
errors (401, 403, 404, 405, 400, 413) are provoked where the operation
lists them and checked the same way; the server's route tables (api.c's
routes[], ops_http.c's ops_routes[]) must name no path or method the
document lacks, and the document none they lack. Prints one line per
check; exits 1 with the first failure."""
import json
import re
import sys
import urllib.parse
import http.client

DOC, BASE, OP, RO, JOB, SRC = sys.argv[1:7]
doc = json.load(open(DOC))
checked = 0


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def resolve(s):
    while "$ref" in s:
        ref = s["$ref"].lstrip("#/").split("/")
        s = doc
        for part in ref:
            s = s[part]
    return s


def validate(v, s, where):
    """A subset of OpenAPI 3.0's schema: $ref, allOf, type, nullable,
    enum, required, properties, additionalProperties: false, items,
    minimum, maximum, maxLength, pattern."""
    s = resolve(s)
    for sub in s.get("allOf", []):
        validate(v, sub, where)
    if v is None:
        if not s.get("nullable") and "type" in s:
            fail("%s: null where %s is not nullable" % (where, s.get("type")))
        return
    t = s.get("type")
    kinds = {"object": dict, "array": list, "string": str, "boolean": bool}
    if t in kinds and not isinstance(v, kinds[t]):
        fail("%s: %r is not a %s" % (where, v, t))
    if t in ("integer", "number"):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            fail("%s: %r is not a %s" % (where, v, t))
        if t == "integer" and v != int(v):
            fail("%s: %r is not an integer" % (where, v))
    if "enum" in s and v not in s["enum"]:
        fail("%s: %r not one of %s" % (where, v, s["enum"]))
    if isinstance(v, dict):
        for k in s.get("required", []):
            if k not in v:
                fail("%s: no %r in %s" % (where, k, sorted(v)))
        props = s.get("properties", {})
        for k, x in v.items():
            if k in props:
                validate(x, props[k], where + "." + k)
            elif s.get("additionalProperties") is False:
                fail("%s: %r is not in the schema" % (where, k))
    if isinstance(v, list) and "items" in s:
        for i, x in enumerate(v):
            validate(x, s["items"], "%s[%d]" % (where, i))


fails = 0


def call(method, path, token=OP, body=None, raw=None):
    """One request; a wrong or missing token comes from an address of its
    own (127.0.0.N), so that the server's 429 after 10 failures from one
    address does not answer the rest."""
    global fails
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    u = urllib.parse.urlsplit(BASE)
    src = None
    if token not in (OP, RO):
        fails += 1
        src = ("127.0.%d.%d" % (1 + fails // 250, 1 + fails % 250), 0)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=70, source_address=src)
    headers = {}
    if token:
        headers["Authorization"] = "Bearer " + token
    if data is not None:
        headers["Content-Type"] = "application/json"
    c.request(method, path, body=data, headers=headers)
    r = c.getresponse()
    out = r.status, r.getheader("Content-Type", ""), r.read()
    c.close()
    return out


def check(method, path, op, status, ctype, body, what):
    global checked
    where = "%s %s (%s) -> %d" % (method.upper(), path, what, status)
    resp = op["responses"].get(str(status))
    if resp is None:
        fail("%s: status not in the document (%s)" % (where, body[:200]))
    want = resp.get("content", {})
    kind = ctype.split(";")[0].strip()
    if kind not in want:
        fail("%s: Content-Type %s, the document says %s" % (where, kind, list(want)))
    schema = want[kind]["schema"]
    value = json.loads(body) if kind == "application/json" else body.decode()
    validate(value, schema, where)
    checked += 1
    print("ok: " + where)
    return value


def concrete(path, ids):
    return path.replace("{job}", JOB).replace("{id}", ids.get("id", "none"))


ids = {}
order = sorted(doc["paths"].items(), key=lambda kv: (kv[0] == "/step-down", kv[0] != "/jobs/{job}/trigger"))
for path, item in order:
    for method, op in item.items():
        url = concrete(path, ids)
        if path == "/runs/{id}/output":
            url += "?job=" + JOB
        ex = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("example")
        if path == "/jobs/{job}/trigger":
            ex = {"wait": 10}
        st, ct, body = call(method.upper(), url, body=ex if method == "post" else None)
        v = check(method, url, op, st, ct, body, "example")
        if path == "/jobs/{job}/trigger":
            if st != 200:
                fail("the trigger did not end within its wait: %s" % body)
            ids["id"] = v["id"]
        elif st >= 300 and path not in ("/step-down",):
            fail("%s %s answered %d: %s" % (method, url, st, body[:200]))
        # The errors the operation lists, provoked.
        r = op["responses"]
        if "401" in r:
            check(method, url, op, *call(method.upper(), url, token=None), "no token")
            check(method, url, op, *call(method.upper(), url, token="bt_wrong"), "a wrong token")
        if "403" in r:
            check(method, url, op, *call(method.upper(), url, token=RO), "a read token")
        if "404" in r and "{job}" in path:
            bad = path.replace("{job}", "no-such-job").replace("{id}", ids.get("id", "x"))
            check(method, bad, op, *call(method.upper(), bad), "no such job")
        if "405" in r:
            other = "GET" if method == "post" else "POST"
            check(method, url, op, *call(other, url, body={} if other == "POST" else None), "another method")
        if "400" in r and method == "post":
            check(method, url, op, *call("POST", url, raw=b'{"nope": 1}'), "a bad body")
        if "413" in r:
            check(method, url, op, *call("POST", url, raw=b" " * 9000), "a body too big")

# The server's routes and the document's: the same set.
served = set()
api = open(SRC + "/src/supervisor/ops/api.c").read()
for p, m in re.findall(r'\{"(/[^"]*)", "(GET|POST)", OP_', api):
    served.add((re.sub(r"\*", "{}", p), m.lower()))
opsh = open(SRC + "/src/supervisor/ops/ops_http.c").read()
table = opsh[opsh.index("ops_routes[]"):]
for p in re.findall(r'\{"(/[^"]*)", h_', table):
    served.add((p, "get"))
documented = {(re.sub(r"\{[a-z]+\}", "{}", p), m) for p, item in doc["paths"].items() for m in item}
if served != documented:
    fail("routes served but not documented: %s; documented but not served: %s"
         % (sorted(served - documented), sorted(documented - served)))
print("ok: the %d routes served are the %d documented" % (len(served), len(documented)))
st, ct, body = call("GET", "/no-such-path")
if st != 404:
    fail("/no-such-path: %d" % st)
print("ok: %d answers checked against the document" % checked)
