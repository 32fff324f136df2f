"""`harness fetch`: the study's declared inputs (`source:` in configs/study.yaml, harness.config.sources)
fetched once, checked, written in each adapter's own file format and pinned in data/SOURCES.lock.

targets.py lists what the config declares, formats.py turns hub rows into an adapter's file and checks a
file with that adapter's reader, remote.py asks the hub, a URL or a git server, lock.py owns SOURCES.lock
and fetch.py runs the stage.
"""
