#!/usr/bin/env python3
"""Writes small delivery files with Python's standard library (an
implementation independent of the SDK and of the fake server).
Run from this directory: python3 make_files.py"""
import csv, gzip, io, json

ROWS = [
    {"id": "agt_0000001", "fullName": "Ana Lima", "city": "Austin", "state": "TX",
     "transactionCount": 42, "volume": 12345678.5, "isTeamLead": True,
     "office": {"name": "Lima \"Best\" Homes", "city": "Austin", "state": "TX"},
     "tags": ["luxury", "investors"], "bigId": 9007199254740993, "note": "line one\nline two, with comma"},
    {"id": "agt_0000002", "fullName": "Bo Chen", "city": "Fresno", "state": "CA",
     "transactionCount": 0, "volume": 0.25, "isTeamLead": False,
     "office": {"name": "Chen Realty", "city": "Fresno", "state": "CA"},
     "tags": [], "bigId": 1, "note": "caf\u00e9 \u2603"},
    {"id": "agt_0000003", "fullName": "Cy D'Souza", "city": "", "state": "NY",
     "transactionCount": 7, "volume": 1e-7, "isTeamLead": False,
     "office": {"name": "", "city": "", "state": ""},
     "tags": ["relocation"], "bigId": -12, "note": ""},
]

def dumps(r):
    return json.dumps(r, ensure_ascii=False, separators=(",", ":"))

# ndjson.gz: two concatenated gzip members, CRLF line ends, a blank line,
# and no newline after the last row.
lines = [dumps(r) for r in ROWS]
first = ("\r\n".join(lines[:2]) + "\r\n\r\n").encode()
second = lines[2].encode()
with open("agents.ndjson.gz", "wb") as f:
    f.write(gzip.compress(first, mtime=0))
    f.write(gzip.compress(second, mtime=0))

with open("agents.json", "w", encoding="utf-8") as f:
    json.dump(ROWS, f, ensure_ascii=False, indent=1)

# csv: UTF-8 BOM, CRLF (the csv module's default), quoted fields with
# embedded newlines, quotes and commas; nested fields JSON-encoded.
cols = list(ROWS[0].keys())
buf = io.StringIO()
w = csv.writer(buf)
w.writerow(cols)
for r in ROWS:
    cells = []
    for c in cols:
        v = r[c]
        if isinstance(v, (dict, list)):
            cells.append(dumps(v))
        elif isinstance(v, bool):
            cells.append("true" if v else "false")
        elif isinstance(v, float):
            cells.append(repr(v))
        else:
            cells.append(str(v))
    w.writerow(cells)
with open("agents.csv", "w", encoding="utf-8-sig", newline="") as f:
    f.write(buf.getvalue())
