/*
 * stacks65k.c: a host with 2^BITS (default 16) distinct allocation stacks,
 * each holding one live block, that then waits until the file STOP exists:
 * the load for timing the HTTP endpoint (bench/serve_bench.sh). A stack is
 * chosen by recursing on the bits of its index through two functions, one
 * per bit value, so stacks are distinct and deterministic.
 * With "churn", every stack frees and allocates its block again every
 * 200 ms, so that a delta window sees all of them.
 * usage: stacks65k STOP [BITS] [churn]
 */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void **keep;
static unsigned bits = 16;

static void walk(unsigned idx, unsigned level);

__attribute__((noinline)) static void
zero(unsigned idx, unsigned level)
{
	walk(idx, level + 1);
	__asm__ volatile("" ::: "memory"); /* no tail call: keep the frame */
}

__attribute__((noinline)) static void
one(unsigned idx, unsigned level)
{
	walk(idx, level + 1);
	__asm__ volatile("" ::: "memory");
}

static void
walk(unsigned idx, unsigned level)
{
	if (level == bits) {
		keep[idx] = malloc(64);
		return;
	}
	if (idx >> level & 1)
		one(idx, level);
	else
		zero(idx, level);
}

int
main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (argc > 2)
		bits = (unsigned)atoi(argv[2]);
	keep = calloc((size_t)1 << bits, sizeof(void *));
	for (unsigned i = 0; i < 1u << bits; i++)
		walk(i, 0);
	int churn = argc > 3;
	struct timespec ts = {0, (churn ? 200 : 20) * 1000 * 1000};
	while (access(argv[1], F_OK) != 0) {
		nanosleep(&ts, NULL);
		for (unsigned i = 0; churn && i < 1u << bits; i++) {
			free(keep[i]);
			walk(i, 0);
		}
	}
	return 0;
}
