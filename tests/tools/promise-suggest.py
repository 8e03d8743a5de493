#!/usr/bin/env python3
"""Suggest rows of tests/promises for promises that have none.

  promise-suggest.py TOP < PROMISES      (PAGE KIND ITEM lines: scripts/promises list)

For each, the first test that names it (in the tool's own suite, or a
test that names the tool), else the first test with a line that runs the
tool with it (an option, an exit status by run -N, a variable or metric
in its body); else a gap. A suggestion is a lead, not a verdict: read the
test before the row goes into the table.
"""
import re, glob, os, sys
top = sys.argv[1]
suites = {}
for f in sorted(glob.glob(top + '/tests/*.bats')):
    name = os.path.basename(f)
    tests = []; cur = None
    for line in open(f):
        m = re.match(r'^@test "(.*)" \{$', line)
        if m:
            cur = [m.group(1), []]; tests.append(cur)
        elif cur is not None:
            cur[1].append(line)
    suites[name] = tests
def esc(s):
    return re.sub(r'([.^$*+?()\[\]{}|\\])', r'\\\1', s)
def page_src(page):
    for sec in ('1', '7'):
        p = '%s/man/%s.%s' % (top, page, sec)
        if os.path.exists(p): return open(p).read()
def row_for(page, kind, item):
    own = page + '.bats'
    tool = page
    anytool = page in ('maro', 'maro-slurm', 'maro-tutorial')
    order = ([own] if own in suites else []) + [s for s in suites if s != own]
    if kind == 'option':
        forms = [item]
        m = re.search(r'Fl ([A-Za-z0-9]) , ' + re.escape(item[1:]) + r'\b', page_src(page))
        if m: forms.append('-' + m.group(1))
        fl = '(' + '|'.join(re.escape(f) for f in forms) + r')(?![\w-])'
        name_re = re.compile(r'(?<![\w-])' + fl)
        line_re = re.compile(re.escape(tool) + r'\b[^|;]*\s' + fl) if not anytool else re.compile(r'\s' + fl)
    elif kind == 'exit':
        name_re = re.compile(r'\b(exits?|status)( with)? (\d+(, | or | and |/))*' + item + r'\b')
        line_re = re.compile(r'run -' + item + r'\b' + ('' if anytool else r'.*\b' + re.escape(tool) + r'\b'))
    else:
        name_re = re.compile(re.escape(item) + r'\b')
        line_re = re.compile(re.escape(item) + r'\b')
    # a test's name: in the tool's own suite, or naming the tool
    for s in order:
        for tname, body in suites[s]:
            if (s == own or anytool or tool in tname) and name_re.search(tname):
                if kind != 'exit' or s == own or anytool or tool in tname:
                    return '%s:^%s' % (s, esc(tname[:70]))
    # a line of a test's body that runs the tool with it
    for s in order:
        for tname, body in suites[s]:
            text = ''.join(body)
            if kind in ('env', 'metric', 'function') and not (anytool or s == own or tool in text):
                continue
            if any(line_re.search(l) for l in body):
                return '%s:^%s' % (s, esc(tname[:70]))
    return None
for line in sys.stdin:
    page, kind, item = line.split()
    r = row_for(page, kind, item)
    print(page, kind, item, r if r else 'gap no test found yet that exercises it')
