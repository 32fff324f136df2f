"""Arms: what each chunk indexes (renderings, DESIGN section 4) on top of a chunker's boundaries."""
