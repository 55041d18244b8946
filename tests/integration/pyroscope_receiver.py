#!/usr/bin/env python3
"""pyroscope_receiver.py: a loopback stand-in for Pyroscope's POST /ingest,
checking each request the way Pyroscope's documented API reads it:
query name/from/until/format=pprof; multipart/form-data with a "profile"
file field (gzip'd profile.proto) and a "sample_type_config" JSON field.
It answers 500 to the first FAIL_FIRST requests (to exercise retries), then
200, and appends one JSON line per request to LOG.

  pyroscope_receiver.py PORT_FILE LOG [FAIL_FIRST]
"""
import gzip
import json
import sys
import urllib.parse
from email.parser import BytesParser
from email.policy import default
from http.server import BaseHTTPRequestHandler, HTTPServer

port_file, log_path = sys.argv[1], sys.argv[2]
fail_first = int(sys.argv[3]) if len(sys.argv) > 3 else 0
count = 0


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        global count
        count += 1
        u = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(u.query)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        rec = {"n": count, "path": u.path, "query": {k: v[0] for k, v in q.items()},
               "ok": True, "why": ""}
        try:
            assert u.path == "/ingest", "path " + u.path
            for k in ("name", "from", "until"):
                assert k in q, "missing " + k
            assert q.get("format", [""])[0] == "pprof", "format"
            assert int(q["from"][0]) <= int(q["until"][0]), "from > until"
            ctype = self.headers.get("Content-Type", "")
            assert ctype.startswith("multipart/form-data"), ctype
            msg = BytesParser(policy=default).parsebytes(
                b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + body)
            parts = {p.get_param("name", header="content-disposition"): p
                     for p in msg.iter_parts()}
            assert "profile" in parts, "no profile field"
            prof = parts["profile"].get_payload(decode=True)
            raw = gzip.decompress(prof)
            assert len(raw) > 0
            with open(log_path + ".%d.pb.gz" % count, "wb") as f:
                f.write(prof)
            cfg = json.loads(parts["sample_type_config"].get_payload(decode=True))
            assert cfg["alloc_space"]["cumulative"] is False, "alloc_space cumulative"
            assert cfg["alloc_objects"]["cumulative"] is False, "alloc_objects cumulative"
            assert cfg["inuse_space"]["aggregation"] == "average", "inuse aggregation"
            rec["profile_bytes"] = len(prof)
        except Exception as e:  # noqa: BLE001 - every failure is reported
            rec["ok"] = False
            rec["why"] = repr(e)
        with open(log_path, "a") as f:
            f.write(json.dumps(rec) + "\n")
        status = 500 if count <= fail_first else 200
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()


srv = HTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os  # noqa: E402
os.rename(port_file + ".tmp", port_file)
srv.serve_forever()
