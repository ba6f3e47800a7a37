"""Live capture: ask a running program's profiler server for a trace and save it as a run folder.

Modules, one job each: `targets` parses what the user typed, `grpc_client`
talks to one profiler server, `ssh` reaches remote machines through SSH port
forwarding, `session` runs a whole capture (several workers, progress, cancel,
saving), `errors` holds the one-sentence failures.
"""
