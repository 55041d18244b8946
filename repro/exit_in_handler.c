/* A program whose SIGALRM handler calls exit() (common in practice, though
 * not async-signal-safe), while its main thread churns malloc/free and a
 * second thread exists (so glibc's malloc takes the arena lock). */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static void on_alrm(int s) { (void)s; exit(0); }
static void *idle(void *a) { (void)a; for (;;) pause(); }

int main(void)
{
	pthread_t th;
	pthread_create(&th, NULL, idle, NULL);
	signal(SIGALRM, on_alrm);
	struct itimerval it = {{0, 0}, {0, 200000}};
	setitimer(ITIMER_REAL, &it, NULL);
	void *keep[256] = {0};
	for (unsigned i = 0;; i++) {
		unsigned k = (i * 2654435761u) >> 24;
		free(keep[k]);
		keep[k] = malloc(200 + (i % 5000));
		memset(keep[k], 1, 8);
	}
}
