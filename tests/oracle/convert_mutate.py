#!/usr/bin/env python3
# convert_mutate.py: writes N mutated copies of the legacy-text seeds in
# fuzz/corpus/legacy (not the jemalloc or gzip ones) to DIR/m0000.., for
# convert.sh's differential test against pprof's parser. Deterministic for
# a given SEED. usage: convert_mutate.py SEED N SEEDDIR OUTDIR
import random,sys,os
random.seed(int(sys.argv[1]))
seeds=[open(os.path.join(sys.argv[3],f),'rb').read() for f in sorted(os.listdir(sys.argv[3])) if not f.endswith('.gz') and not f.startswith('je')]
alpha=b" 0123456789abcdefx:-[]@/.\t\r\n#-=$rxpABCF()_heapvz2MAPPED_LIBRARIES:"
for i in range(int(sys.argv[2])):
    s=bytearray(random.choice(seeds))
    if len(s)>1500:
        s=s[:1500]
    for j in range(random.randint(1,6)):
        op=random.randint(0,3); pos=random.randint(0,len(s))
        if op==0: s[pos:pos]=bytes([random.choice(alpha)])
        elif op==1 and s: del s[min(pos,len(s)-1)]
        elif op==2 and s: s[min(pos,len(s)-1)]=random.choice(alpha)
        else:
            k=random.randint(1,20); q=random.randint(0,len(s)); s[pos:pos]=s[q:q+k]
    open(os.path.join(sys.argv[4],'m%04d'%i),'wb').write(bytes(s))
