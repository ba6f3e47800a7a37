"""Memory of a trace: each program's buffers at its peak (`programs`), each allocator over time
(`over_time`), which program run each allocation belongs to (`links`), and the report that puts
them together (`report`)."""
