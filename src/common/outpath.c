/*
 * outpath.c: which output paths name a stream rather than a file (issue 29):
 * /dev/null, a FIFO, /dev/stdout. Those are written as given: no ".PID" or
 * ".N" inserted (/dev/null.4242 is a regular file in /dev's tmpfs), never
 * through a temporary file renamed over them. Shared by the library (names
 * and writes) and `heapprof run` (the template it passes on).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compiler.h"
#include "parse.h"

/* N if s is a decimal fd number (no sign, no leading junk), else -1. */
static int
fd_number(const char *s)
{
	if (*s < '0' || *s > '9' || strlen(s) > 9)
		return -1;
	int n = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		n = n * 10 + (*s - '0');
	}
	return n;
}

HP_HIDDEN int
heapprof__out_stream(const char *path)
{
	static const struct {
		const char *name;
		int fd;
	} std_names[] = {{"/dev/stdin", 0}, {"/dev/stdout", 1}, {"/dev/stderr", 2}};
	for (size_t i = 0; i < sizeof(std_names) / sizeof(*std_names); i++)
		if (!strcmp(path, std_names[i].name))
			return std_names[i].fd;
	if (!strncmp(path, "/dev/fd/", 8))
		return fd_number(path + 8) >= 0 ? fd_number(path + 8) : -1;
	if (!strncmp(path, "/proc/self/fd/", 14))
		return fd_number(path + 14) >= 0 ? fd_number(path + 14) : -1;
	struct stat st;
	if (lstat(path, &st) == 0 &&
	    (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
		return HP_OUT_STREAM_PATH;
	return HP_OUT_FILE;
}
