#!/usr/bin/python3
"""Writes pandas.csv with pandas (Debian's python3-pandas, 1.5.3), the way a
data engineer's script writes a delivery back out: pandas spells booleans
True/False and writes missing values as empty cells. The SDK's tests read it
(TestDecodeRows_CSVBooleans). Run from this directory: /usr/bin/python3 make_pandas.py"""
import json
import pandas as pd

rows = 600  # past the SDK's first batch of 512 records
df = pd.DataFrame({
    "id": [f"agt_{i:07d}" for i in range(rows)],
    # a bool column: True/False
    "active": [i % 3 != 0 for i in range(rows)],
    # an object column of booleans and missing values: True, False, empty
    "isTeamLead": [None if i % 5 == 0 else i % 2 == 0 for i in range(rows)],
    # upper case, as other writers spell them
    "verified": ["TRUE" if i % 2 else "FALSE" for i in range(rows)],
    # text that spells True in some rows only: stays text
    "note": ["True" if i % 4 == 0 else f"note {i}" for i in range(rows)],
    # single letters: DuckDB's sniffer takes t/f, polars does not: text
    "grade": ["t" if i % 2 else "f" for i in range(rows)],
    # zips with leading zeros stay text
    "zip": [f"{(i * 7919) % 100000:05d}" for i in range(rows)],
    # nested fields JSON-encoded, as the API's csv files carry them
    "office": [json.dumps({"name": f"Office {i % 7}", "zip": "02134"}) for i in range(rows)],
    "tags": [json.dumps(["x"] * (i % 3)) for i in range(rows)],
})
df.to_csv("pandas.csv", index=False)
