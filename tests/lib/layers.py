#!/usr/bin/env python3
"""layers.py ROOT -- the layering of the tree, checked from its sources.

The folders, bottom up (a folder may include its own headers and those of
the folders below it, never one above; cron, machine and lib include
nothing of the others):

    src/cron, machine, src/lib (its public headers only)
    src/common   <- src/conf <- src/group <- src/supervisor (ops/, shim/) <- src/cli

baton.h, the lock users' header, includes neither baton_election.h nor
baton_redis.h (they include it). Every quoted include must name a header that exists in exactly one folder
(the include path would otherwise decide), in the file's own folder or
below. Outside src/lib, only libbaton's installed headers may be included.

Prints one line per violation and exits 1 when there is any; 0 otherwise.
"""
import os
import re
import sys

FOLDERS = [  # (folder, rank)
    ("src/cron", 0),
    ("machine", 0),
    ("src/lib", 0),
    ("src/common", 1),
    ("src/conf", 2),
    ("src/group", 3),
    ("src/supervisor", 4),
    ("src/supervisor/ops", 4),
    ("src/supervisor/shim", 4),
    ("src/cli", 5),
]
# Folders that include nothing of the others.
ALONE = {"src/cron", "machine", "src/lib"}
# libbaton's installed headers: all that the rest of the tree may include.
PUBLIC = {"baton.h", "baton_election.h", "baton_redis.h"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(root, folder):
    d = os.path.join(root, folder)
    if not os.path.isdir(d):
        return []
    return sorted(f for f in os.listdir(d) if f.endswith((".c", ".h")))


def check_folders(root):
    errors = []
    rank = dict(FOLDERS)
    where = {}  # header name -> folders that have it
    for folder, _ in FOLDERS:
        for f in sources(root, folder):
            if f.endswith(".h"):
                where.setdefault(f, []).append(folder)
    for name, folders in sorted(where.items()):
        if len(folders) > 1:
            errors.append("%s: a header of this name is in %s" % (name, ", ".join(folders)))
    for folder, r in FOLDERS:
        for f in sources(root, folder):
            path = os.path.join(folder, f)
            with open(os.path.join(root, path), encoding="utf-8") as fh:
                text = fh.read()
            for inc in INCLUDE.findall(text):
                base = os.path.basename(inc)
                if inc != base:
                    errors.append("%s: includes %s by a path (use the include directories)"
                                  % (path, inc))
                    continue
                own = base in sources(root, folder)
                target = folder if own else (where.get(base) or [None])[0]
                if target is None:
                    errors.append("%s: includes %s, which is in none of the folders" % (path, inc))
                elif own:
                    continue
                elif folder in ALONE:
                    errors.append("%s: includes %s (%s): %s depends on nothing of ours"
                                  % (path, inc, target, folder))
                elif target == "src/lib" and base not in PUBLIC:
                    errors.append("%s: includes %s, libbaton's internal header (only %s)"
                                  % (path, inc, ", ".join(sorted(PUBLIC))))
                elif rank[target] > r:
                    errors.append("%s: includes %s from %s, a layer above %s"
                                  % (path, inc, target, folder))
    # baton.h, the lock users' header, includes neither of the others.
    with open(os.path.join(root, "src/lib/baton.h"), encoding="utf-8") as fh:
        for inc in INCLUDE.findall(fh.read()):
            errors.append("src/lib/baton.h: includes %s (it includes nothing of ours)" % inc)
    return errors


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    errors = check_folders(root)
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
