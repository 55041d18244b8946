# dumpfaults.py: gdb script (bench/exitdump.sh): the page faults of the
# exit dump alone. Stops at heapprof__serve_exit, reads the process's
# minor and major fault counts (/proc/PID/stat), lets the function return
# and reads them again; prints "DUMPFAULTS minor=N major=N" and kills the
# process. Usage: gdb -q -batch -ex 'set environment LD_PRELOAD LIB'
#                     -x bench/dumpfaults.py --args PROGRAM ARGS...
import gdb


def faults():
    pid = gdb.selected_inferior().pid
    with open('/proc/%d/stat' % pid) as f:
        v = f.read().rsplit(')', 1)[1].split()
    return int(v[7]), int(v[9])


before = None


class AtDump(gdb.Breakpoint):
    def stop(self):
        global before
        before = faults()
        return True


gdb.execute("set breakpoint pending on")
gdb.execute("set pagination off")
AtDump("heapprof__serve_exit")
gdb.execute("run")
if before is not None:
    gdb.execute("finish")
    after = faults()
    print("DUMPFAULTS minor=%d major=%d" % (after[0] - before[0],
                                            after[1] - before[1]))
    gdb.execute("kill")
else:
    print("DUMPFAULTS none: no exit dump")
