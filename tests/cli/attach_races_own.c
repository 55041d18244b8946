/* attach_races_own.c: for tests/cli/attach_races.sh: an executable that is
 * its own allocator (malloc and the rest defined here, as redis-server
 * links jemalloc in), a bump allocator that ends the program with status 3
 * if a thread enters it again (as a remote call made on a thread stopped
 * inside it would: the loader allocates with the program's malloc). The
 * main thread spends its time inside it; a second reads stdin to "quit".
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static _Thread_local int inside;
static char heap[256 << 20];
static size_t off;
static volatile int done;
static void *
bump(size_t n, size_t al)
{
	if (inside) {
		write(2, "REENTERED\n", 10);
		_exit(3);
	}
	inside = 1;
	for (volatile int i = 0; i < 3000; i++)
		;
	size_t o = __atomic_load_n(&off, __ATOMIC_RELAXED), s;
	do {
		s = (o + 16 + al - 1) & ~(al - 1);
		if (s + n > sizeof(heap)) {
			write(2, "FULL\n", 5);
			_exit(4);
		}
	} while (!__atomic_compare_exchange_n(&off, &o, s + n, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	((size_t *)(heap + s))[-1] = n;
	inside = 0;
	return heap + s;
}
void *malloc(size_t n) { return bump(n, 16); }
void free(void *p) { (void)p; }
void *calloc(size_t a, size_t b) { void *p = bump(a * b, 16); memset(p, 0, a * b); return p; }
size_t malloc_usable_size(void *p) { return p ? ((size_t *)p)[-1] : 0; }
void *realloc(void *p, size_t n) {
	void *q = bump(n, 16);
	if (p) { size_t o = malloc_usable_size(p); memcpy(q, p, o < n ? o : n); }
	return q;
}
int posix_memalign(void **r, size_t al, size_t n) { *r = bump(n, al < 16 ? 16 : al); return 0; }
void *aligned_alloc(size_t al, size_t n) { return bump(n, al < 16 ? 16 : al); }
void *memalign(size_t al, size_t n) { return bump(n, al < 16 ? 16 : al); }
static void *
reader(void *a)
{
	char b[64];
	while (fgets(b, sizeof(b), stdin) && strncmp(b, "quit", 4) != 0)
		;
	done = 1;
	return a;
}
int
main(void)
{
	pthread_t t;
	setvbuf(stdout, NULL, _IOLBF, 0);
	pthread_create(&t, NULL, reader, NULL);
	printf("ready\n");
	while (!done) {
		free(malloc(64));

	}
	pthread_join(t, NULL);
	printf("end own\n");
	return 0;
}
