#!/usr/bin/env python3
"""Systematic mutants of maro's C sources, for scripts/mutate-sample.

No C mutation tool is packaged for Debian 12, and PyPI (universalmutator)
is out of reach here, so this is a small one of our own, with the classic
operators of the mutation-testing literature, each applied at one place of
one line outside comments, strings and preprocessor lines:

  ROR  a relational operator replaced (== !=, < <=, > >=)
  LCR  && and || swapped
  AOR  binary + and - swapped
  CRP  an integer constant n made n+1, 0 made 1, 1 made 0
  NEG  the condition of an if or while negated
  SDL  a statement that is a call alone on its line removed
  RET  return 0 and return -1 swapped; return true/false swapped

Every mutant has an id that does not depend on line numbers: a hash of
the file, the line's text before and after (and which of its equal lines it
is), so that the triage file (tests/mutants/triage) outlives edits
elsewhere in the file.

  mutants.py list FILE...                 every mutant: id, file, line, op, old, new
  mutants.py sample SEED N FILE...        a seeded sample, N in all (proportional, >= 10 a file),
                                          stable: a mutant is in it by a hash of the seed and its id
  mutants.py apply ID FILE                write FILE with mutant ID applied (to stdout)
  mutants.py ids FILE...                  the ids alone (make lint: triage entries still exist)
"""
import hashlib
import re
import sys

def mask(src):
    """The source with comments, strings, char literals and preprocessor
    lines blanked (same length), so that operators are found only in code."""
    out = list(src)
    i, n = 0, len(src)
    line_start = True
    while i < n:
        c = src[i]
        if line_start and c in ' \t':
            i += 1
            continue
        if line_start and c == '#':
            # a preprocessor line, with its continuations
            while i < n and src[i] != '\n':
                if src[i] == '\\' and i + 1 < n and src[i + 1] == '\n':
                    out[i] = ' '
                    i += 2
                    continue
                out[i] = ' '
                i += 1
            continue
        line_start = False
        if c == '\n':
            line_start = True
            i += 1
        elif src.startswith('/*', i):
            j = src.find('*/', i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != '\n':
                    out[k] = ' '
            i = j
        elif src.startswith('//', i):
            while i < n and src[i] != '\n':
                out[i] = ' '
                i += 1
        elif c in '"\'':
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == '\\' else 1
            for k in range(i + 1, min(j, n)):
                if out[k] != '\n':
                    out[k] = ' '
            i = j + 1
        else:
            i += 1
    return ''.join(out)

ROR = {'==': '!=', '!=': '==', '<=': '<', '>=': '>', '<': '<=', '>': '>='}
ROR_RE = re.compile(r'(?<![<>=!\-])(==|!=|<=|>=|<|>)(?![<>=])')
LCR_RE = re.compile(r'&&|\|\|')
AOR_RE = re.compile(r'(?<=[\w\)\]] )([+-])(?= [\w\(])')
INT_RE = re.compile(r'(?<![\w.])(\d+)([uUlL]*)(?![\w.])')
COND_RE = re.compile(r'\b(if|while)\s*\(')
CALL_RE = re.compile(r'^(\s*)[A-Za-z_]\w*(\.|->)?[\w.>-]*\s*\(.*\)\s*;\s*$')
RET = [(re.compile(r'\breturn 0;'), 'return -1;'),
       (re.compile(r'\breturn -1;'), 'return 0;'),
       (re.compile(r'\breturn true;'), 'return false;'),
       (re.compile(r'\breturn false;'), 'return true;')]

def close_paren(m, start):
    depth = 0
    for k in range(start, len(m)):
        if m[k] == '(':
            depth += 1
        elif m[k] == ')':
            depth -= 1
            if depth == 0:
                return k
    return -1

def line_mutants(line, mline):
    """(op, new line) for each mutant of one line; mline is its masked text."""
    res = []
    if not mline.strip():
        return res
    for m in ROR_RE.finditer(mline):
        op = m.group(1)
        s, e = m.span(1)
        # skip the arrow and shifts, and #include-like angle brackets (masked anyway)
        if op in '<>' and (mline[s - 1:s] == '-' or mline[e:e + 1] in '<>'):
            continue
        res.append(('ROR', line[:s] + ROR[op] + line[e:]))
    for m in LCR_RE.finditer(mline):
        s, e = m.span()
        res.append(('LCR', line[:s] + ('||' if m.group() == '&&' else '&&') + line[e:]))
    for m in AOR_RE.finditer(mline):
        s, e = m.span(1)
        res.append(('AOR', line[:s] + ('-' if m.group(1) == '+' else '+') + line[e:]))
    # return -1 is RET's; a constant of an attribute changes no behaviour
    crp = not re.match(r'^\s*return -?\d+;', mline) and '__attribute__' not in mline
    for m in INT_RE.finditer(mline if crp else ''):
        s, e = m.span(1)
        # array sizes and bit-field widths change layout, not behaviour: still mutated
        v = int(m.group(1), 0) if not m.group(1).startswith('0') or m.group(1) == '0' else None
        if v is None:
            continue
        for nv in ([1] if v == 0 else [0, v + 1] if v == 1 else [v + 1]):
            res.append(('CRP', line[:s] + str(nv) + line[e:]))
    for m in COND_RE.finditer(mline):
        o = m.end() - 1
        c = close_paren(mline, o)
        if c < 0:
            continue
        res.append(('NEG', line[:o + 1] + '!(' + line[o + 1:c] + ')' + line[c:]))
    if CALL_RE.match(mline) and not re.match(r'^\s*(return|if|while|for|switch|sizeof)\b', mline):
        res.append(('SDL', re.match(r'^\s*', line).group() + ';'))
    for rx, rep in RET:
        if rx.search(mline):
            res.append(('RET', rx.sub(rep, line, count=1)))
    return res

def mutants(path):
    src = open(path, encoding='utf-8').read()
    lines = src.split('\n')
    mlines = mask(src).split('\n')
    seen = {}
    out = []
    for no, (line, mline) in enumerate(zip(lines, mlines), 1):
        for op, new in line_mutants(line, mline):
            if new == line:
                continue
            key = (line.strip(), new.strip())
            k = seen.get(key, 0)
            seen[key] = k + 1
            h = hashlib.sha256(('%s\0%s\0%s\0%d' % (path, key[0], key[1], k)).encode()).hexdigest()[:12]
            out.append({'id': h, 'file': path, 'line': no, 'op': op, 'old': line, 'new': new})
    return out

def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().split('\n\n')[-1], file=sys.stderr)
        return 2
    cmd, args = argv[1], argv[2:]
    if cmd in ('list', 'ids'):
        for f in args:
            for m in mutants(f):
                if cmd == 'ids':
                    print(m['id'])
                else:
                    print('%s\t%s\t%d\t%s\t%s\t%s' % (m['id'], m['file'], m['line'], m['op'],
                                                    m['old'].strip(), m['new'].strip()))
        return 0
    if cmd == 'sample' and len(args) >= 3:
        seed, n, files = int(args[0]), int(args[1]), args[2:]
        per = {f: mutants(f) for f in files}
        total = sum(len(v) for v in per.values()) or 1
        for f in files:
            k = min(len(per[f]), max(10, round(n * len(per[f]) / total)))
            # the k of the file whose keyed hashes of (seed, id) are lowest:
            # an edit elsewhere, or one that adds or removes a mutant here,
            # leaves the others' places in the sample as they were
            rank = sorted(per[f], key=lambda m: hashlib.sha256(
                ('%d:%s' % (seed, m['id'])).encode()).hexdigest())
            for m in sorted(rank[:k], key=lambda m: (m['line'], m['id'])):
                print('%s\t%s\t%d\t%s\t%s\t%s' % (m['id'], m['file'], m['line'], m['op'],
                                                m['old'].strip(), m['new'].strip()))
        return 0
    if cmd == 'apply' and len(args) == 2:
        mid, f = args
        for m in mutants(f):
            if m['id'] == mid:
                lines = open(f, encoding='utf-8').read().split('\n')
                lines[m['line'] - 1] = m['new']
                sys.stdout.write('\n'.join(lines))
                return 0
        print('mutants.py: no mutant %s in %s' % (mid, f), file=sys.stderr)
        return 1
    print('mutants.py: unknown command', file=sys.stderr)
    return 2

if __name__ == '__main__':
    sys.exit(main(sys.argv))
