"""On-disk formats, no policy: pack entries, .idx v1/v2, .rev, trailers, object headers."""
