#!/usr/bin/env python3
"""layers.py ROOT -- the layering of the tree, checked from its sources.

The folders, bottom up (a folder may include its own headers and those of
the folders below it, never one above; cron, machine and lib include
nothing of the others):

    src/cron, machine, src/lib (its public headers only)
    src/common   <- src/conf <- src/group <- src/supervisor <- src/cli

A folder's subfolders are of its layer (src/supervisor/ops, shim...).
Every quoted include must name a header that exists in exactly one folder
(the include path would otherwise decide), in the file's own folder or
below. Outside src/lib, only libbaton's installed headers may be included;
baton.h, the lock users' header, includes neither baton_election.h nor
baton_redis.h (they include it).

src/lib's own layers are its internal headers, bottom up (base_int.h has
the map): base_int.h <- transport_int.h <- topology_int.h <- loop_int.h <-
lock_int.h. A header includes only those below it; a file of src/lib is
of the layer of the highest one it includes, declares its functions in
that header, and calls only functions of its layer or below (read from
the sources: definitions and calls of baton_* and baton__* names). Between
the files of a layer there is no circle either, but in the lock layer,
whose lock.c is still the hub of the lock calls (lock_async.c, sem.c,
renew.c and quorum_lock.c call back into it).

Prints one line per violation and exits 1 when there is any; 0 otherwise.
"""
import os
import re
import sys

LAYERS = [  # (folder, rank): a folder's subfolders are of its layer
    ("src/cron", 0),
    ("machine", 0),
    ("src/lib", 0),
    ("src/common", 1),
    ("src/conf", 2),
    ("src/group", 3),
    ("src/supervisor", 4),  # ops/, shim/, and any other part of baton run
    ("src/cli", 5),
]
# Folders that include nothing of the others.
ALONE = {"src/cron", "machine", "src/lib"}
# libbaton's installed headers: all that the rest of the tree may include.
PUBLIC = {"baton.h", "baton_election.h", "baton_redis.h"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

LIB_LAYERS = ["base_int.h", "transport_int.h", "topology_int.h", "loop_int.h", "lock_int.h"]
LIB_NAMES = ["base", "transport", "topology", "loop", "lock"]
# Circles between files are tolerated only inside this layer (see above).
LIB_CIRCLES_OK = {"lock"}


def layer_folders(root):
    """[(folder, rank, top)]: the layers' folders and their subfolders"""
    out = []
    for top, rank in LAYERS:
        for d, subdirs, _ in os.walk(os.path.join(root, top)):
            subdirs.sort()
            out.append((os.path.relpath(d, root), rank, top))
    return out


def sources(root, folder):
    d = os.path.join(root, folder)
    if not os.path.isdir(d):
        return []
    return sorted(f for f in os.listdir(d) if f.endswith((".c", ".h")))


def check_folders(root):
    errors = []
    tree = layer_folders(root)
    rank = {folder: r for folder, r, _ in tree}
    top = {folder: t for folder, _, t in tree}
    where = {}  # header name -> folders that have it
    for folder, _, _ in tree:
        for f in sources(root, folder):
            if f.endswith(".h"):
                where.setdefault(f, []).append(folder)
    for name, folders in sorted(where.items()):
        if len(folders) > 1:
            errors.append("%s: a header of this name is in %s" % (name, ", ".join(folders)))
    for folder, r, _ in tree:
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
                elif top[folder] in ALONE and top[target] != top[folder]:
                    errors.append("%s: includes %s (%s): %s depends on nothing of ours"
                                  % (path, inc, target, top[folder]))
                elif top[target] == "src/lib" and base not in PUBLIC:
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


def strip_c(text):
    """text without comments, string and character literals"""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"'(\\.|[^'\\\n])*'", "''", text)


def functions(text):
    """[(name, body)] of the functions defined at the top level of stripped text"""
    out, depth, i, start = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch == "{":
            if depth == 0:
                head = text[start:i]
                m = re.search(r"\b([A-Za-z_]\w*)\s*\(((?:[^()]|\([^()]*\))*)\)\s*$", head)
                body_start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                if m is not None and not re.search(r"=\s*$", head.split(m.group(0))[0]):
                    out.append((m.group(1), text[body_start:i + 1]))
                m = None
                start = i + 1
        elif ch == ";" and depth == 0:
            start = i + 1
        i += 1
    return out


def cycles(graph):
    """the strongly connected components of more than one node"""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def check_lib(root):
    errors = []
    d = os.path.join(root, "src/lib")
    rank = {h: i for i, h in enumerate(LIB_LAYERS)}
    texts = {f: open(os.path.join(d, f), encoding="utf-8").read() for f in sources(root, "src/lib")}
    for h in LIB_LAYERS:
        if h not in texts:
            errors.append("src/lib/%s: missing (the layers are %s)" % (h, ", ".join(LIB_LAYERS)))
            return errors
    internal = [f for f in texts if f.endswith("_int.h")]
    for h in sorted(internal):
        if h not in rank:
            errors.append("src/lib/%s: an internal header that is no layer (%s)"
                          % (h, ", ".join(LIB_LAYERS)))
            continue
        for inc in INCLUDE.findall(texts[h]):
            if inc in rank and rank[inc] >= rank[h]:
                errors.append("src/lib/%s: includes %s, which is not below it" % (h, inc))
    layer, defs, declared = {}, {}, {}
    for f in sorted(texts):
        if not f.endswith(".c"):
            continue
        incs = [rank[i] for i in INCLUDE.findall(texts[f]) if i in rank]
        if incs:
            layer[f] = max(incs)
        for name, _ in functions(strip_c(texts[f])):
            if name.startswith("baton_"):
                defs[name] = f
    for h in LIB_LAYERS:
        for m in re.finditer(r"\b(baton__\w+)\s*\(", strip_c(texts[h])):
            declared.setdefault(m.group(1), h)
    for name, f in sorted(defs.items()):
        h = declared.get(name)
        if h is not None and f in layer and rank[h] != layer[f]:
            errors.append("src/lib/%s: defines %s, declared in %s (%s), but the file is of the %s "
                          "layer" % (f, name, h, LIB_NAMES[rank[h]], LIB_NAMES[layer[f]]))
    graph = {}
    for f in sorted(layer):
        for fn, body in functions(strip_c(texts[f])):
            for m in re.finditer(r"\b(baton_\w+)\b", body):
                g = defs.get(m.group(1))
                if g is None or g == f or g not in layer:
                    continue
                if layer[g] > layer[f]:
                    errors.append("src/lib/%s: %s calls %s (%s, the %s layer), above the %s layer"
                                  % (f, fn, m.group(1), g, LIB_NAMES[layer[g]],
                                     LIB_NAMES[layer[f]]))
                elif layer[g] == layer[f]:
                    graph.setdefault(f, set()).add(g)
    for comp in cycles(graph):
        if LIB_NAMES[layer[comp[0]]] not in LIB_CIRCLES_OK:
            errors.append("src/lib: a circle between %s (the %s layer)"
                          % (", ".join(comp), LIB_NAMES[layer[comp[0]]]))
    return sorted(set(errors))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    errors = check_folders(root) + check_lib(root)
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
