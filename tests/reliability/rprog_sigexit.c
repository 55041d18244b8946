/*
 * rprog_sigexit: signal handlers that leave while the program allocates
 * (rel_range.sh).
 *
 *   rprog_sigexit exit     a SIGALRM handler calls exit(3) while main
 *                          mallocs, reallocs and frees in a loop (the
 *                          "SIGINT handler calls exit()" pattern): the exit
 *                          dump then runs on top of whatever malloc (glibc's
 *                          or the profiler's) the signal interrupted.
 *   rprog_sigexit longjmp  a SIGALRM handler siglongjmps out, 200 times,
 *                          wherever the signal lands but in libc and the
 *                          dynamic loader (leaving glibc's malloc that way
 *                          breaks the program without a profiler too):
 *                          inside the profiler's sampled path and the
 *                          unwinder as well; then two threads free main's
 *                          blocks and allocate, main allocates again, and
 *                          the program exits 0.
 * A hang is the failure (the script's timeout).
 */
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

static void *slots[512];

static void
churn(unsigned *seed, int rounds)
{
	for (int i = 0; i < rounds; i++) {
		*seed = *seed * 1103515245u + 12345u;
		unsigned r = *seed >> 8;
		unsigned k = r % 512;
		size_t n = (r >> 9) % 3 == 0 ? (r >> 11) % 200000 : (r >> 11) % 512;
		/* The slot is cleared before each call, so a longjmp out of
		 * one leaks a block at worst, never frees one twice. */
		void *old = slots[k];
		slots[k] = NULL;
		if (old && (r & 1)) {
			void *q = realloc(old, n + 1);
			slots[k] = q ? q : old;
		} else {
			free(old);
			slots[k] = (r & 2) ? calloc(1, n) : malloc(n);
		}
		if (slots[k] && n)
			((char *)slots[k])[0] = (char)r;
	}
}

static void
on_alarm_exit(int sig)
{
	(void)sig;
	exit(3);
}

static sigjmp_buf jb;
static volatile sig_atomic_t jumps, stays;

/* The text of libc and the loader, found before the timer starts. */
static uintptr_t lo[16], hi[16];
static int nlib;

static int
note_lib(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	if (!strstr(info->dlpi_name, "libc.so") &&
	    !strstr(info->dlpi_name, "ld-linux"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum && nlib < 16; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		lo[nlib] = info->dlpi_addr + ph->p_vaddr;
		hi[nlib] = lo[nlib] + ph->p_memsz;
		nlib++;
	}
	return 0;
}

static void
on_alarm_jump(int sig, siginfo_t *si, void *uc_)
{
	(void)sig;
	(void)si;
	uintptr_t pc = 0;
	ucontext_t *uc = uc_;
#if defined(__x86_64__)
	pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	pc = (uintptr_t)uc->uc_mcontext.pc;
#else
	(void)uc;
#endif
	for (int i = 0; i < nlib; i++)
		if (pc >= lo[i] && pc < hi[i]) {
			stays++;
			return;
		}
	jumps++;
	siglongjmp(jb, 1);
}

static void *
worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	/* Main's blocks first: their slots go back to main's shard. */
	for (int k = (int)seed - 1; k < 512; k += 2) {
		free(slots[k]);
		slots[k] = NULL;
	}
	for (int i = 0; i < 20000; i++) {
		seed = seed * 1103515245u + 12345u;
		void *p = malloc((seed >> 8) % 3000);
		free(p);
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	unsigned seed = (unsigned)getpid();
	if (argc > 1 && !strcmp(argv[1], "exit")) {
		signal(SIGALRM, on_alarm_exit);
		/* 20..220 ms in: well inside the loop. */
		struct itimerval it = {{0, 0}, {0, 20000 + (long)(seed % 200) * 1000}};
		setitimer(ITIMER_REAL, &it, NULL);
		for (;;)
			churn(&seed, 1000);
	}
	if (argc > 1 && !strcmp(argv[1], "longjmp")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_alarm_jump;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGALRM, &sa, NULL);
		dl_iterate_phdr(note_lib, NULL);
		struct itimerval it = {{0, 997}, {0, 997}};
		sigsetjmp(jb, 1);
		if (jumps == 0)
			setitimer(ITIMER_REAL, &it, NULL);
		while (jumps < 200)
			churn(&seed, 100);
		struct itimerval off = {{0, 0}, {0, 0}};
		setitimer(ITIMER_REAL, &off, NULL);
		pthread_t t[2];
		for (int i = 0; i < 2; i++)
			pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		churn(&seed, 20000);
		printf("longjmp: %d jumps, done\n", (int)jumps);
		return 0;
	}
	return 2;
}
