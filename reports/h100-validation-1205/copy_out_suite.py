"""FSDP2's all-gather copy-outs in the suite's traces (--param-traffic on, copy-in chunk-cat: the
256 MiB device copies on the CUPTI compute stream, docs/PRESETS.md A2b), grouped by what ran beside
them on the other streams: nothing, a device copy (the world-1 reduce-scatter's), an add kernel (the
`+=` of a sync after a sync, docs/PRESETS.md A4). Durations in microseconds (CUPTI).

Run in this folder: python3 copy_out_suite.py *.trace.json.gz  (output: copy_out_suite.txt)
The real FSDP2's figures on one H200 are reports/h200-diagnosis-1204/call3/copy_out.py's."""
import collections
import gzip
import json
import statistics
import sys

for path in sys.argv[1:]:
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        d = json.load(f)
    ev = d['traceEvents']
    names = {(e['pid'], e['tid']): e['args']['name'] for e in ev if e.get('ph') == 'M' and e['name'] == 'thread_name'}
    X = [e for e in ev if e.get('ph') == 'X' and names.get((e['pid'], e['tid']), '').startswith('CUPTI')]
    for e in X: e['track'] = names[(e['pid'], e['tid'])]
    copies = [e for e in X if e['name'] == 'memcpy DtoD' and 'compute' in e['track'] and e['args'].get('bytes', 0) >= 256 * 2**20]
    groups = collections.defaultdict(list)
    for c in copies:
        a, b = c['ts'], c['ts'] + c['dur']
        beside = [o for o in X if o is not c and o['track'] != c['track'] and o['ts'] < b and o['ts'] + o['dur'] > a]
        kinds = set()
        for o in beside:
            if 'add_f32' in o['name']: kinds.add('add')
            elif o['name'].startswith('memcpy'): kinds.add('copy')
        groups['+'.join(sorted(kinds)) or 'nothing'].append(c['dur'])
    print(path)
    for k, v in sorted(groups.items()):
        print(f"  beside {k:10} n={len(v):3} median {statistics.median(v):7.1f} us")
