"""Generated records kept in the cache as NDJSON: made once for each version of what
generates them (the synthetic models, the diskstats fields, the topics and record schemas)
and read again by every later run, since generating them in Python costs more than judging
them."""
import hashlib
import json
import os
import sys
import time
from pathlib import Path

from iopipe.paths import CACHE, REPO, SCHEMA

PROGRESS_EVERY = 1_000_000


def generator_sources():
    """Every file whose content decides what the generators write."""
    sources = sorted(Path(__file__).parent.glob("*.py")) + [REPO / "iopipe" / "diskstats_fields.py", SCHEMA / "topics.json"]
    return sources + sorted((SCHEMA / "records").glob("*.schema.json"))


def records_file(folder, stem, key, records):
    """$IOPIPE_CACHE/`folder`/`stem`-<digest>.ndjson, written from `records()` (an iterable
    of records) unless this version of the generators already wrote it for `key`, which
    names everything else the records depend on (sizes, seed). A file of the same stem for
    another version or key is removed, and so is one an interrupted run left partial."""
    digest = hashlib.sha256(key.encode())
    for source in generator_sources():
        digest.update(source.read_bytes())
    path = CACHE / folder / f"{stem}-{digest.hexdigest()[:16]}.ndjson"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    for older in path.parent.glob(f"{stem}-*.ndjson"):
        older.unlink(missing_ok=True)
    remove_abandoned(path.parent.glob(f"{stem}-*.partial-*"))
    partial = path.with_suffix(f".partial-{os.getpid()}")
    started = time.monotonic()
    with open(partial, "w") as f:
        for i, record in enumerate(records()):
            f.write(json.dumps(record, separators=(",", ":")) + "\n")
            if i % PROGRESS_EVERY == 0:
                print(f"generating {stem}: {i:,} records, {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    partial.rename(path)  # whole or not at all: an interrupted run leaves no file to reuse
    return path


def remove_abandoned(partials):
    """Partial files whose writer is gone (an interrupted run): never read, up to a GB each."""
    for partial in partials:
        pid = partial.name.rsplit("-", 1)[1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            partial.unlink(missing_ok=True)
