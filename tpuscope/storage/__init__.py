"""Where profile files come from besides the local disk (cloud buckets, any fsspec URL)."""
