#!/bin/sh
# heapprof run on Go programs (issue 14 h): a pure Go binary (static) is
# named as such and runs unprofiled with its own status; a cgo binary
# (dynamic) is told what is and is not profiled: its C allocations, but no
# profile at exit (the Go runtime leaves through a raw exit_group), while
# -i gives periodic ones. Statically linked C: tests/oracle/firstminute.sh.
. "$(dirname "$0")/../integration/lib.sh"
need_lib run_go
oracle_tmpdir
if ! command -v go >/dev/null 2>&1; then
	skip_tool run_go go golang-go
	exit 0
fi
H=$HEAPPROF
G=$TMPD/go
mkdir -p "$G/pure" "$G/cgo"
printf 'module gohp\n\ngo 1.19\n' >"$G/go.mod"
cat >"$G/pure/main.go" <<'GO'
package main

import "os"

func main() {
	b := make([]byte, 1<<20)
	os.Exit(len(b) >> 20 * 3)
}
GO
cat >"$G/cgo/main.go" <<'GO'
package main

/*
#include <stdlib.h>
#include <string.h>
static void *keep(void) { void *p = malloc(1 << 20); memset(p, 1, 1 << 20); return p; }
*/
import "C"
import (
	"fmt"
	"time"
)

var kept []interface{}

func main() {
	for i := 0; i < 30; i++ {
		kept = append(kept, C.keep())
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Println(len(kept))
}
GO
if ! (cd "$G" && CGO_ENABLED=0 go build -o pure/pure ./pure) 2>"$TMPD/build.err"; then
	skip run_go "go build failed: $(head -2 "$TMPD/build.err")"
	exit 0
fi
"$H" run -o "$TMPD/pure.pb.gz" -- "$G/pure/pure" >/dev/null 2>"$TMPD/pure.err"
rc=$?
if [ $rc -eq 3 ] && grep -q 'statically linked Go program: LD_PRELOAD cannot profile it' "$TMPD/pure.err"; then
	pass run_go.pure_says_so
else
	fail run_go.pure_says_so "status $rc: $(head -3 "$TMPD/pure.err")"
fi
if (cd "$G" && CGO_ENABLED=1 go build -o cgo/cgoprog ./cgo) 2>"$TMPD/build.err"; then
	"$H" run -o "$TMPD/cgo.pb.gz" -- "$G/cgo/cgoprog" >/dev/null 2>"$TMPD/cgo.err"
	rc=$?
	if [ $rc -eq 0 ] && grep -q 'is a Go program: its heap is Go' "$TMPD/cgo.err" &&
		grep -q 'no profile at exit' "$TMPD/cgo.err"; then
		pass run_go.cgo_says_so
	else
		fail run_go.cgo_says_so "status $rc: $(head -3 "$TMPD/cgo.err")"
	fi
	# What the message promises: -i gives profiles with the C allocations.
	"$H" run -r 1 -i 1 -o "$TMPD/cgoi.pb.gz" -- "$G/cgo/cgoprog" >/dev/null 2>"$TMPD/cgoi.err"
	f=$(ls "$TMPD"/cgoi.*.pb.gz 2>/dev/null | tail -1)
	if [ -n "$f" ] && "$H" top -n 30 "$f" 2>/dev/null | grep -q 'keep'; then
		pass run_go.cgo_interval
	else
		fail run_go.cgo_interval "no periodic profile with keep: $(ls "$TMPD" | tr '\n' ' ') $(head -3 "$TMPD/cgoi.err")"
	fi
else
	skip run_go.cgo "no cgo toolchain: $(head -2 "$TMPD/build.err")"
fi
exit $FAILED
