#!/usr/bin/env python3
"""docs_facts.py -- the facts the hand-written documents repeat, checked
against the code's tables (test_docs_facts.sh runs it).

usage: docs_facts.py REFERENCE LOCK_HELP BATON_H CMAKELISTS FILE...

REFERENCE is the output of `baton check --reference` (the configuration
keys, the log events of events.h, the variables of run.h and hook.h),
LOCK_HELP that of `baton lock --help` (the variables of baton lock). For
each FILE (Markdown, man(7), or YAML with comments):

  - every BATON_* name is one the code knows: a variable of a run, a hook,
    baton lock or the client, an error of baton.h, a CMake option;
  - every list of a run's variables (a paragraph naming BATON_JOB and three
    more) names them all, and a hook's (one naming BATON_HOOK too) all of
    the hook's;
  - every log event named is one of events.h: in a JSON line
    ("event":"x"), a metric's label (event="x"), a text log line
    (TIME LEVEL NODE x ...), and, in a sentence that speaks of events, a
    `name_like_this` that the reference does not know otherwise;
  - every term or fence written as a number has the 15 digits of a real
    one (max(last + 1, Redis TIME in 10 us units)).

Prints one line per problem, FILE:LINE: what; exits 1 if there is any."""
import re
import sys


def table_names(ref, title_re, pattern):
    """The first cells of the Markdown table under the heading matching
    title_re, matching pattern."""
    out, on = [], False
    for line in ref.splitlines():
        if line.startswith('### '):
            on = re.search(title_re, line) is not None
            continue
        m = re.match(r'\| `(' + pattern + r')` \|', line)
        if on and m:
            out.append(m.group(1))
    return out


def main(argv):
    if len(argv) < 6:
        print(__doc__, file=sys.stderr)
        return 64
    ref = open(argv[1]).read()
    lock_help = open(argv[2]).read()
    baton_h = open(argv[3]).read()
    cmake = open(argv[4]).read()
    files = argv[5:]

    events = set(table_names(ref, r'^### Log events', r'[a-z_]+'))
    run_vars = table_names(ref, r'environment of a job', r'BATON_[A-Z_]+')
    hook_vars = table_names(ref, r'environment of a hook', r'BATON_[A-Z_]+')
    lock_vars = re.findall(r'^  (BATON_[A-Z_]+)', lock_help.split('environment:', 1)[-1], re.M)
    errors = ['BATON_' + n for n in re.findall(r'^\s*X\(([A-Z]+), -?\d+,', baton_h, re.M)]
    options = re.findall(r'option\((BATON_[A-Z_]+)', cmake)
    known_vars = set(run_vars) | set(hook_vars) | set(lock_vars) | set(errors) | set(options)
    # Every lower-case identifier the reference uses: keys, fields, values.
    words = set(re.findall(r'[a-z][a-z0-9]*(?:[._][a-z0-9]+)+', ref))
    problems = []
    if len(events) < 40 or len(run_vars) < 7 or len(hook_vars) < 16 or len(lock_vars) < 4 \
            or len(errors) < 10:
        problems.append('the tables read are too short: %d events, %d run, %d hook and %d lock '
                        'variables, %d errors' % (len(events), len(run_vars), len(hook_vars),
                                                  len(lock_vars), len(errors)))

    for path in files:
        raw = open(path, encoding='utf-8').read()
        man = re.search(r'\.[1-9]$', path) is not None
        lines = raw.split('\n')
        if man:  # man(7): the text without its font and escape marks
            lines = [re.sub(r'\\f[BIR]|\\&|\\:', '', l).replace('\\-', '-').replace('\\e', '\\')
                     for l in lines]

        def where(i):
            return '%s:%d' % (path, i + 1)

        # Paragraphs, as (first line, text): Markdown's between blank lines
        # (fences and headings apart), man(7)'s between macros, and YAML's
        # comments between blank comments and the lines that name a key.
        paras, cur, start = [], [], 0
        for i, l in enumerate(lines):
            if path.endswith('.yaml'):
                brk = not l.startswith('#') or re.match(r'#\s*$', l) or re.match(r'#   [a-z_]+:', l)
                text = l.lstrip('#').strip() if l.startswith('#') else ''
            elif man:
                brk, text = l.startswith('.'), '' if l.startswith('.') else l.strip()
            else:  # a table's row, and a list's item, are paragraphs of their own
                brk = l.strip() == '' or l.startswith(('```', '#', '|', '- '))
                text = l.strip() if l.strip() and not l.startswith(('```', '#')) else ''
            if brk and cur:
                paras.append((start, ' '.join(cur)))
                cur = []
            if text:
                if not cur:
                    start = i
                cur.append(text)
            if l.startswith('|') and cur:
                paras.append((start, ' '.join(cur)))
                cur = []
        if cur:
            paras.append((start, ' '.join(cur)))

        for i, l in enumerate(lines):
            for name in re.findall(r'BATON_[A-Z][A-Z0-9_]*', l):
                if name not in known_vars:
                    problems.append('%s: %s is no variable, error or option of the code'
                                    % (where(i), name))
            for m in re.finditer(r'"event"\s*:\s*"([a-z_]+)"|\bevent="([a-z_]+)"', l):
                ev = m.group(1) or m.group(2)
                if ev not in events:
                    problems.append('%s: event %s is not in events.h' % (where(i), ev))
            m = re.match(r'\s*\d{4}-\d\d-\d\dT[\d:.]+Z (DEBUG|INFO|WARN|ERROR) +\S+ ([a-z_]+)\b', l)
            if m and m.group(2) not in events:
                problems.append('%s: event %s is not in events.h' % (where(i), m.group(2)))
            for m in re.finditer(r'\b(term|fence)(?:=|": ?|":| )(\d+)\b', l):
                if len(m.group(2)) != 15:
                    problems.append('%s: %s %s: a real one has 15 digits' % (where(i), m.group(1),
                                                                              m.group(2)))

        for start, text in paras:
            names = re.findall(r'BATON_[A-Z][A-Z0-9_]*', text)
            if 'BATON_JOB' in names and len(set(names)) >= 4:
                want = hook_vars if 'BATON_HOOK' in names else run_vars
                missing = [v for v in want if v not in names]
                if missing:
                    problems.append('%s: a list of the %s variables lacks %s' % (
                        where(start), 'hook' if want is hook_vars else 'run', ', '.join(missing)))
            # A sentence about the log's events (an alert on them, say):
            # every `name_like_this` in it that the reference does not know
            # as another thing (a key, a field, a value) is taken for an
            # event. Metrics and functions (baton_*) are not.
            for sentence in re.split(r'(?<=\.)\s+(?=[A-Z`])', text):
                if not (re.search(r'\bevents?\b', sentence, re.I)
                        and re.search(r'\blog|\balert', sentence, re.I)):
                    continue
                for name in re.findall(r'`([a-z][a-z0-9]*(?:_[a-z0-9]+)+)`', sentence):
                    if name not in events and name not in words and not name.startswith('baton_'):
                        problems.append('%s: %s, named among events, is not in events.h'
                                        % (where(start), name))
    problems = list(dict.fromkeys(problems))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
