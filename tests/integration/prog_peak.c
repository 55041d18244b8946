/* prog_peak: a batch job for the peak profile. keep_results() keeps
 * KEEP_MB MiB for good; build_index() builds an index of INDEX_MB MiB
 * (nodes of 200..2000 bytes in a linked list), which free_index() frees.
 * At exit ~KEEP_MB is in use; the peak had ~INDEX_MB at build_index.
 * Usage: prog_peak [INDEX_MB [KEEP_MB [AFTER]]] (defaults 300, 20); AFTER
 * the index is freed: "reset" calls heapprof_peak_reset() (found with
 * dlsym: the profiler is preloaded), "signal" raises SIGUSR2. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node {
	struct node *next;
	char payload[];
};

static char **kept;
static size_t nkept;

static void
keep_results(size_t mb)
{
	nkept = mb * 4; /* 256 KiB blocks: sampled (nearly) always */
	if (!nkept)
		return;
	kept = calloc(nkept, sizeof(*kept));
	for (size_t i = 0; i < nkept; i++) {
		kept[i] = malloc(262144);
		memset(kept[i], 1, 262144);
	}
}

static struct node *
build_index(size_t mb)
{
	size_t want = mb << 20, have = 0;
	unsigned x = 12345;
	struct node *head = NULL;
	while (have < want) {
		x = x * 1103515245u + 12345u;
		size_t sz = 200 + (x >> 8) % 1800;
		struct node *n = malloc(sizeof(*n) + sz);
		memset(n->payload, 2, sz);
		n->next = head;
		head = n;
		have += sz + sizeof(*n);
	}
	return head;
}

static void
free_index(struct node *n)
{
	while (n) {
		struct node *next = n->next;
		free(n);
		n = next;
	}
}

int
main(int argc, char **argv)
{
	size_t index_mb = argc > 1 ? strtoul(argv[1], NULL, 10) : 300;
	size_t keep_mb = argc > 2 ? strtoul(argv[2], NULL, 10) : 20;
	/* No stdio buffer: with KEEP_MB 0 nothing at all stays in use (a
	 * sampled 4 KiB buffer made "nothing in use" flaky, 1 run in 20). */
	setvbuf(stdout, NULL, _IONBF, 0);
	keep_results(keep_mb);
	struct node *idx = build_index(index_mb);
	free_index(idx);
	const char *after = argc > 3 ? argv[3] : "";
	if (!strcmp(after, "reset")) {
		void (*reset)(void) = (void (*)(void))dlsym(RTLD_DEFAULT,
		                                            "heapprof_peak_reset");
		if (!reset) {
			printf("no heapprof_peak_reset\n");
			return 1;
		}
		reset();
	} else if (!strcmp(after, "signal")) {
		raise(SIGUSR2);
	}
	printf("done %zu\n", nkept);
	return 0;
}
