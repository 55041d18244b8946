# rel_sigalloc.sh's gdb script: for each K in KS, run the program, stop at
# the first call of FN, step K instructions, deliver SA_SIG (SIGUSR1 unless
# set; rprog_sigalloc's handler allocates) and let it run; a run that has not ended 15 s later is
# interrupted and reported as "hang K <frames>". Prints "ran N hangs H".
import os, signal, threading, gdb
fn = os.environ["SA_FN"]
ks = [int(k) for k in os.environ["SA_KS"].split()]
sig = os.environ.get("SA_SIG", "SIGUSR1")
ign = int(os.environ.get("SA_IGN", "0"))  # stop at call ign + 1
gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("set startup-with-shell off")
gdb.execute("set breakpoint pending on")
ran = hangs = 0
for k in ks:
    bp = gdb.Breakpoint(fn, internal=True)
    bp.ignore_count = ign
    gdb.execute("run", to_string=True)
    bp.delete()
    inf = gdb.selected_inferior()
    if inf.pid == 0:
        print("never reached", fn)
        break
    if k:
        gdb.execute("stepi %d" % k, to_string=True)
    if inf.pid == 0:
        continue
    pid = inf.pid
    timer = threading.Timer(15.0, lambda: os.kill(pid, signal.SIGINT))
    timer.start()
    gdb.execute("signal " + sig, to_string=True)
    timer.cancel()
    ran += 1
    if gdb.selected_inferior().pid != 0:
        hangs += 1
        bt = gdb.execute("bt 8", to_string=True).replace("\n", " | ")
        print("hang %d %s" % (k, bt[:600]))
        gdb.execute("kill", to_string=True)
print("ran %d hangs %d" % (ran, hangs))
