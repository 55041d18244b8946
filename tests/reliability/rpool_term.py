import multiprocessing as mp, os, sys

def work(n):
    x = [str(i) * 3 for i in range(n)]
    return len(x)

def busy(_):
    Q.put(os.getpid())
    while True:
        [str(i) for i in range(1000)]

if __name__ == '__main__':
    mp.set_start_method('fork')
    Q = mp.Queue()
    p = mp.Pool(2)
    print(sum(p.map(work, [20000] * 8, chunksize=1)))
    for i in range(2):
        p.apply_async(busy, (i,))
    started = sorted([Q.get(timeout=30), Q.get(timeout=30)])
    with open(sys.argv[1], 'w') as f:
        f.write(' '.join(str(w.pid) for w in p._pool) + '\n')
    p.terminate()
    p.join()
    print('terminated')
