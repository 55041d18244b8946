#!/bin/sh
# rel_serve.sh with libheapprof.a linked into the program (rprog_serve_linked)
# instead of preloaded: the same life-cycle tests, named rel.serve.linked.*.
SERVE_LINKED=1 exec sh "$(dirname "$0")/rel_serve.sh"
