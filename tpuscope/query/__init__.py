"""SQL over a trace and its analyses (DuckDB over the model's numpy columns as Arrow tables).

`tables.py` says what each table holds and builds it when first named; `session.py` runs queries
on a locked-down DuckDB connection. Above `tpuscope.analysis` (its tables hold analysis results),
below the commands and the app; no Qt.
"""
