/*
 * rlib_oldmremap.c: preloaded before libheapprof.so, makes mremap behave
 * as Linux before 6.17 does (rel_remap.sh): a MREMAP_FIXED move whose
 * source spans more than one mapping fails with EFAULT, but only after
 * the destination has been unmapped (mm/mremap.c mremap_to: do_munmap of
 * new_addr, then vma_to_resize's "can't remap across vm area
 * boundaries"). Newer kernels move such a source. No allocation: the
 * profiler calls this with its range lock held.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static char buf[1 << 20];

static uintptr_t
hex(const char **s)
{
	uintptr_t v = 0;
	for (;; (*s)++) {
		char c = **s;
		if (c >= '0' && c <= '9')
			v = v * 16 + (uintptr_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (uintptr_t)(c - 'a' + 10);
		else
			return v;
	}
}

/* Does [a, a + len) lie inside one line of /proc/self/maps? */
static int
one_mapping(uintptr_t a, size_t len)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	size_t n = 0;
	ssize_t r;
	while (n < sizeof(buf) - 1 && (r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = 0;
	for (const char *s = buf; *s;) {
		uintptr_t lo = hex(&s);
		s++; /* '-' */
		uintptr_t hi = hex(&s);
		if (a >= lo && a < hi)
			return a + len <= hi;
		while (*s && *s != '\n')
			s++;
		if (*s)
			s++;
	}
	return 1;
}

void *
mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	void *new_addr = NULL;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		new_addr = va_arg(ap, void *);
		va_end(ap);
		if (!one_mapping((uintptr_t)old, old_len)) {
			munmap(new_addr, new_len);
			errno = EFAULT;
			return MAP_FAILED;
		}
	}
	return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
}
