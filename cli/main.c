/*
 * main.c: the heapprof CLI entry point: the subcommand table, --help and
 * --version, and the helpers every subcommand shares (error printing, whole
 * file input, atomic file output).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapprof.h"
#include "cli.h"
#include "parse.h"
#include "version.h"

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *help;
} commands[] = {
	{"run", cli_run, "run a program under the heap profiler"},
	{"attach", cli_attach, "profile a running process (PID) for a while"},
	{"detach", cli_detach, "end the heapprof attach session of a process (PID)"},
	{"top", cli_top, "print the top allocation sites of a profile"},
	{"delta", cli_delta, "subtract the cumulative values of two profiles"},
	{"merge", cli_merge, "merge profiles of the same type into one"},
	{"collapse", cli_collapse, "write a profile as folded stacks (flamegraph.pl)"},
	{"flame", cli_flame, "write a profile as an HTML flame graph"},
	{"symbolize", cli_symbolize, "add function names, files and lines (DWARF) to a profile"},
	{"convert", cli_convert, "convert legacy text heap profiles to and from pprof"},
};

static void
usage(FILE *f)
{
	fprintf(f, "usage: heapprof COMMAND [ARGS...]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n'heapprof COMMAND --help' describes each command.\n");
}

void
cli_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("heapprof: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

int
cli_read_file(const char *path, uint8_t **out, size_t *len)
{
	int fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	if (!buf) {
		if (fd)
			close(fd);
		return -ENOMEM;
	}
	for (;;) {
		if (n == cap) {
			uint8_t *nb = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				if (fd)
					close(fd);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = -errno;
			free(buf);
			if (fd)
				close(fd);
			return e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (fd)
		close(fd);
	*out = buf;
	*len = n;
	return 0;
}

int
cli_out_open(cli_out *o, const char *path)
{
	memset(o, 0, sizeof(*o));
	if (strcmp(path, "-") == 0) {
		o->fd = 1;
		return 0;
	}
	int s = heapprof__out_stream(path);
	if (s >= 0) {
		o->fd = s;
		return 0;
	}
	if (s == HP_OUT_STREAM_PATH) {
		o->fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		o->close_fd = 1;
		return o->fd < 0 ? -errno : 0;
	}
	o->path = strdup(path);
	size_t n = strlen(path) + 32;
	o->tmp = malloc(n);
	if (!o->path || !o->tmp) {
		free(o->path);
		free(o->tmp);
		return -ENOMEM;
	}
	snprintf(o->tmp, n, "%s.tmp.%ld", path, (long)getpid());
	o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	             0644);
	if (o->fd < 0) {
		int e = -errno;
		free(o->path);
		free(o->tmp);
		o->path = o->tmp = NULL;
		return e;
	}
	return 0;
}

int
cli_out_write(void *ctx, const void *p, size_t n)
{
	cli_out *o = ctx;
	const char *c = p;
	while (n) {
		ssize_t w = write(o->fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return o->err = -errno;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int
cli_out_commit(cli_out *o)
{
	int rc = o->err;
	if (o->close_fd) {
		if (close(o->fd) != 0 && !rc)
			rc = -errno;
		o->close_fd = 0;
	}
	if (!o->tmp)
		return rc;
	if (close(o->fd) != 0 && !rc)
		rc = -errno;
	if (!rc && rename(o->tmp, o->path) != 0)
		rc = -errno;
	if (rc)
		unlink(o->tmp);
	free(o->path);
	free(o->tmp);
	o->path = o->tmp = NULL;
	return rc;
}

void
cli_out_abort(cli_out *o)
{
	if (o->close_fd) {
		close(o->fd);
		o->close_fd = 0;
	}
	if (!o->tmp)
		return;
	close(o->fd);
	unlink(o->tmp);
	free(o->path);
	free(o->tmp);
	o->path = o->tmp = NULL;
}

int
main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "help") && argc > 2) {
		/* `heapprof help run`: the command's own help */
		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (!strcmp(argv[2], commands[i].name)) {
				char *av[] = {argv[2], "--help", NULL};
				return commands[i].fn(2, av);
			}
		cli_err("unknown command '%s'", argv[2]);
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("%s\n", heapprof__version_string());
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	cli_err("unknown command '%s'", argv[1]);
	usage(stderr);
	return 2;
}
