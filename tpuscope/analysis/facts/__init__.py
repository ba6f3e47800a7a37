"""Facts of one trace that several analyses build on: the diagnose rules, the overview, the pod table
and the run comparison. Nothing here decides whether something is a problem (the rules do).

- `context`: `Context`, the trace's facts (steps, devices, busy time, host events by name or class);
- `intervals`: set operations on interval lists (union, intersection, difference, per-window totals);
- `waits`: when the devices waited for the host: for input, for a compilation;
- `evidence`: evidence items, pointers into the trace (an event, a time range) that findings carry;
- `outliers`: robust outlier scores (XProf's modified z-score).
"""
