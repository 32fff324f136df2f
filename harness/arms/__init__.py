"""Arms: what each chunk indexes (renderings, docs/design.md, Arms) on top of a chunker's boundaries."""
