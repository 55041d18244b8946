#!/usr/bin/env python3
# flame_cases.py: the expectations for tests/cli/flame_check.mjs, computed
# from pprof's reading of the profiles (pprofcheck totals / dump) and from
# `heapprof collapse` (whose stacks tests/cli/collapse.sh checks against
# pprof). Usage: flame_cases.py DIR  (DIR holds the files flame.sh made)
# Writes DIR/cases.json.
import json
import os
import re
import subprocess
import sys

d = sys.argv[1]
env = os.environ
heapprof, pprofcheck = env['HEAPPROF'], env['PPROFCHECK']


def run(*a):
    return subprocess.run(a, check=True, capture_output=True, text=True).stdout


def totals(f):
    """[(type, unit, sum)] per pprof."""
    out = []
    for line in run(pprofcheck, 'totals', f).splitlines():
        if line.startswith('samples '):
            continue
        tu, v = line.rsplit(' ', 1)
        t, u = tu.split('/', 1)
        out.append((t, u, int(v)))
    return out


def default_type(f, types):
    m = re.search(r'^default_sample_type: "(.*)"$', run(pprofcheck, 'dump', f), re.M)
    names = [t for t, _, _ in types]
    if m and m.group(1) in names:
        return names.index(m.group(1))
    return len(types) - 1


def folded(f, i):
    out = []
    for line in run(heapprof, 'collapse', '--sample-index', str(i), f).splitlines():
        st, v = line.rsplit(' ', 1)
        out.append((st.split(';'), int(v)))
    return out


cases = {'chromium': env.get('CHROMIUM', '/usr/bin/chromium'), 'modules': env['NODE_MODULES'],
         'shots': env['SHOTS'], 'pages': [], 'speedscope': None}

# plain page: go_heap_basic
f = env['PLAIN']
ty = totals(f)
dt = default_type(f, ty)
search = r'main\.alloc(large|small)'
rx = re.compile(search, re.I)
fo = folded(f, dt)
tot = sum(abs(v) for _, v in fo)
hit = sum(abs(v) for st, v in fo if any(rx.search(x) for x in st))
cases['pages'].append({
    'name': 'flame_plain', 'kind': 'plain', 'file': d + '/plain.html', 'minFrames': 5,
    'totals': [v for _, _, v in ty], 'typeNames': [t for t, _, _ in ty], 'defaultType': dt,
    'expectFrames': ['runtime.main', 'main.main', 'main.allocLarge', 'main.allocSmall'],
    'search': search, 'searchShare': hit / tot if tot else 0, 'zoomTo': 'main.allocSmall'})

# diff pages: NEW - BASE both ways
def diff_case(name, new, base, html):
    tn, tb = totals(new), totals(base)
    dt = default_type(new, tn)
    delta = tn[dt][2] - dict((t, v) for t, _, v in tb).get(tn[dt][0], 0)
    # the change of every node (path prefix); a name is "grew"/"shrank"
    # when every node of that name changed that way
    per = {}
    for sign, prof in ((1, new), (-1, base)):
        for st, v in folded(prof, dt if prof == new else
                            [t for t, _, _ in tb].index(tn[dt][0])):
            for k in range(1, len(st) + 1):
                key = tuple(st[:k])
                per[key] = per.get(key, 0) + sign * v
    signs = {}
    for key, v in per.items():
        signs.setdefault(key[-1], set()).add((v > 0) - (v < 0))
    grew = sorted(n for n, s in signs.items() if s == {1})[:20]
    shrank = sorted(n for n, s in signs.items() if s == {-1})[:20]
    cases['pages'].append({'name': name, 'kind': 'diff', 'file': html, 'minFrames': 4,
                           'delta': delta, 'grew': grew, 'shrank': shrank})


diff_case('flame_diff', env['NEW'], env['OLD'], d + '/diff.html')
diff_case('flame_diff_reversed', env['OLD'], env['NEW'], d + '/diff_rev.html')
diff_case('flame_diff_mixed', env['MIXED_NEW'], env['MIXED_OLD'], d + '/mixed.html')

cases['pages'].append({
    'name': 'flame_escape', 'kind': 'escape', 'file': d + '/escape.html',
    'names': ['leaf</script><script>alert(1)</script>', 'mid;dle "q" & <b>x</b>',
              'inl_outer', 'inl_inner', 'main']})

if env.get('SPEEDSCOPE'):
    cases['speedscope'] = {'index': env['SPEEDSCOPE'], 'files': [
        {'name': 'pprof', 'path': d + '/ours.pb.gz', 'expectText': 'ours.pb.gz'},
        {'name': 'folded', 'path': d + '/ours.folded.txt', 'expectText': 'ours.folded.txt'}]}
with open(d + '/cases.json', 'w') as fh:
    json.dump(cases, fh, indent=1)
