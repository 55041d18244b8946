#!/bin/sh
# git (Debian's) on a repository made here: 300 commits of a growing set of
# files, then `git log -p` and `git rev-list --objects --all` (each one
# process, no pager).
#   rate 1: against heaptrack (acc.py ALLOW);
#   default rate, RUNS runs of `git log -p`: git has no accounting of its
#     own, but makes the same calls every run, so the mean alloc_space is
#     compared with heaptrack's total: within 3 standard errors.
. "$(dirname "$0")/lib.sh"
need_base acc.git
need_tool acc.git git
oracle_tmpdir
RUNS=$(by_tier 10 40)
R=$TMPD/repo
export GIT_CONFIG_NOSYSTEM=1 HOME=$TMPD GIT_AUTHOR_DATE="2020-01-01T00:00:00Z" \
	GIT_COMMITTER_DATE="2020-01-01T00:00:00Z" GIT_PAGER=cat
git init -q "$R" && cd "$R" || { fail acc.git.setup "git init"; exit 1; }
git config user.name t && git config user.email t@example.com
i=0
while [ $i -lt 300 ]; do
	i=$((i + 1))
	seq $i $((i * 7)) >"f$((i % 40))"
	echo "line $i" >>log.txt
	git add -A && git commit -qm "commit $i" || { fail acc.git.setup "commit $i"; exit 1; }
done
vs_heaptrack acc.git.log 120 git log -p || FAILED=1
ht_log=$HT_TOTAL
vs_heaptrack acc.git.revlist 120 git rev-list --objects --all || FAILED=1
[ -n "$ht_log" ] || exit 1
default_runs acc.git.log "$RUNS" 60 git log -p || exit 1
$ACC within acc.git.log.default.alloc "$ht_log" 0 $(sums acc.git.log "$RUNS" alloc_space) || FAILED=1
exit $FAILED
