/*
 * hooks.c: the delivery half registered with the capture (hp_delivery in
 * collect.h): the capture calls these at start, exit, fork and on a
 * sampled allocation when a dump may be due, without including serve.h,
 * so that serve depends on collect and never the other way round.
 */
#include "serve.h"

const hp_delivery heapprof__delivery = {
	.start = heapprof__serve_start,
	.exit = heapprof__serve_exit,
	.exit_wait = heapprof__serve_exit_wait,
	.due = heapprof__serve_due,
	.request = heapprof__serve_request,
	.atfork_prepare = heapprof__serve_atfork_prepare,
	.atfork_parent = heapprof__serve_atfork_parent,
	.atfork_child = heapprof__serve_atfork_child,
	.sandbox = heapprof__serve_sandbox,
};

/* Referenced (strongly) by init.c: the capture's reference to
 * heapprof__delivery is weak, and a weak reference does not pull an
 * archive member in, so without this libheapprof.a linked into a program
 * would leave the whole delivery half out (no exit profile). */
HP_HIDDEN const int heapprof__delivery_linked = 1;
