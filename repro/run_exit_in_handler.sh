#!/bin/sh
# usage: run_exit_in_handler.sh LIB [runs]: runs of exit_in_handler hung
# (timeout 10 s, then KILL) without and with LD_PRELOAD=LIB
LIB=$1; N=${2:-10}; cd "$(dirname "$0")"
for mode in off on; do hang=0; for i in $(seq 1 $N); do d=$(mktemp -d)
	if [ $mode = on ]; then timeout -k 2 10 env LD_PRELOAD=$LIB HEAPPROF_OUT=$d/p.pb.gz ./exit_in_handler
	else timeout -k 2 10 ./exit_in_handler; fi
	rc=$?; [ $rc = 0 ] || hang=$((hang+1)); rm -rf $d; done
	echo "$mode: $hang of $N runs did not exit 0 (hung)"; done
