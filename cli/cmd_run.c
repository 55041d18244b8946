/*
 * cmd_run.c: `heapprof run`: runs a command with libheapprof.so preloaded
 * (HEAPPROF_LIBRARY, else found beside the heapprof binary, in ../lib or
 * in ../lib/heapprof, so an installed tree works wherever it is), its
 * options passed through the HEAPPROF_* environment, so children are
 * profiled too, one file per pid.
 * The command replaces this process (exec), so its exit status, signals
 * and pid are exactly its own.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapprof.h"
#include "cli.h"
#include "run_child.h"
#include "parse.h"

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: heapprof run [OPTIONS] -- CMD [ARGS...]\n"
	        "\n"
	        "Runs CMD under the heap profiler and writes its heap profile when\n"
	        "it exits (and every -i seconds, or on -s SIGNAL), then prints one\n"
	        "line naming the files written. A relative PATH is taken from the\n"
	        "current directory, even if CMD changes directory.\n"
	        "\n"
	        "  -r, --rate BYTES      mean bytes between samples (default 524288;\n"
	        "                        1 records every allocation; 0 turns sampling off)\n"
	        "  -o, --output PATH     output file; %%p is the pid, %%n the dump number\n"
	        "                        (default heapprof.%%p.%%n.pb.gz)\n"
	        "  -i, --interval SECS   also write a profile every SECS seconds\n"
	        "  -s, --signal SIG      also write a profile when SIG arrives (e.g. USR2;\n"
	        "                        TERM or INT: the profile, then the program ends)\n"
	        "      --dump-growth BYTES  also write one each time the in-use estimate\n"
	        "                        passes its high-water mark by BYTES (e.g. 64m)\n"
	        "      --dump-limit FRAC also write one when it reaches FRAC (0..1] of\n"
	        "                        the memory limit (cgroup, ulimit -v)\n"
	        "      --dump-usage FRAC also write one when the cgroup's usage (or the\n"
	        "                        address space, for ulimit -v) reaches FRAC\n"
	        "                        of its limit (read every 100 ms by a thread)\n"
	        "      --dump-pressure MS  also write one when memory stalls (PSI)\n"
	        "                        exceed MS ms in a second (at most one per 10 s)\n"
	        "      --peak-file PATH  keep the peak profile in PATH, rewritten each\n"
	        "                        time the in-use estimate passes the last one\n"
	        "                        written by --peak-step (default 0.1 = 10%%):\n"
	        "                        on disk before an OOM kill\n"
	        "      --peak-step FRAC  see --peak-file\n"
	        "      --text            legacy text format instead of pprof\n"
	        "      --unwind MODE     dwarf (default: call-frame information),\n"
	        "                        fp (frame pointers) or libunwind (opt-in)\n"
	        "      --depth N         frames per stack, 1..64 (default 64)\n"
	        "      --no-exit-dump    no profile at exit\n"
	        "      --write-empty     an exit profile from every process, also\n"
	        "                        those that sampled nothing (default: none\n"
	        "                        from them; the summary counts them)\n"
	        "      --mode delta      periodic files hold each interval's allocations\n"
	        "                        (and the in-use state), for file-shipping agents\n"
	        "      --http ADDR       serve /debug/pprof/heap and /allocs on ADDR\n"
	        "                        (e.g. 127.0.0.1:6060; loopback only unless\n"
	        "                        HEAPPROF_HTTP_ALLOW_REMOTE=1)\n"
	        "      --push URL        send each interval's profile to a Pyroscope\n"
	        "                        server (http://host:4040); --app NAME names it\n"
	        "      --symbolize MODE  symtab (default: function names from symbol\n"
	        "                        tables), dwarf (file:line, inlined frames) or none\n"
	        "      --only PATTERNS   profile only programs whose name matches one\n"
	        "                        of these comma-separated shell patterns (e.g.\n"
	        "                        'python3*'); applies to --http and --push too\n"
	        "      --no-children     profile only CMD's own process (and what it\n"
	        "                        execs), not the processes it starts\n"
	        "  -h, --help            this help\n"
	        "\n"
	        "The profile opens with `heapprof top FILE` or `go tool pprof FILE`.\n");
}

/* The directory of the running heapprof binary + "/libheapprof.so". */
static int
find_library(char *buf, size_t cap)
{
	const char *env = getenv("HEAPPROF_LIBRARY");
	if (env && *env) {
		if (strlen(env) >= cap)
			return -ENAMETOOLONG;
		strcpy(buf, env);
		if (access(buf, R_OK) != 0)
			return -errno;
		/* A relative path is made absolute: LD_PRELOAD takes it as
		 * it is, relative to each process's own directory, so every
		 * process that ran elsewhere (make -C, a cd) was silently not
		 * profiled. A bare name is left to the loader's search. */
		if (buf[0] != '/' && strchr(buf, '/')) {
			char abs[PATH_MAX];
			if (!realpath(buf, abs))
				return -errno;
			if (strlen(abs) >= cap)
				return -ENAMETOOLONG;
			strcpy(buf, abs);
		}
		return 0;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -errno;
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	static const char *const rel[] = {"/libheapprof.so",
	                                  "/../lib/libheapprof.so",
	                                  "/../lib/heapprof/libheapprof.so"};
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		if ((size_t)snprintf(buf, cap, "%s%s", exe, rel[i]) >= cap)
			return -ENAMETOOLONG;
		if (access(buf, R_OK) == 0)
			return 0;
	}
	return -ENOENT;
}

/* For heapprof attach (cmd_attach.c): the same search. */
int
cli_find_library(char *buf, size_t cap)
{
	return find_library(buf, cap);
}

/* --http's address as the library will take it (src/serve/http.c): HOST:PORT
 * with a numeric address or localhost, loopback unless
 * HEAPPROF_HTTP_ALLOW_REMOTE=1. 0, or a message for the user. */
static const char *
http_addr_problem(const char *spec)
{
	const char *colon = strrchr(spec, ':');
	if (!colon || colon == spec || !colon[1] ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
	    strtol(colon + 1, NULL, 10) > 65535)
		return "expected HOST:PORT, such as 127.0.0.1:6060";
	char host[256];
	size_t n = (size_t)(colon - spec);
	if (n >= sizeof(host))
		return "host too long";
	memcpy(host, spec, n);
	host[n] = 0;
	char *h = host;
	if (h[0] == '[' && n > 1 && h[n - 1] == ']') {
		h[n - 1] = 0;
		h++;
	}
	if (!strcmp(h, "localhost"))
		h = "127.0.0.1";
	struct in_addr a4;
	struct in6_addr a6;
	const char *ar = getenv("HEAPPROF_HTTP_ALLOW_REMOTE");
	int remote = ar && !strcmp(ar, "1");
	if (inet_pton(AF_INET, h, &a4) == 1)
		return remote || (ntohl(a4.s_addr) >> 24) == 127
		           ? NULL
		           : "not a loopback address (HEAPPROF_HTTP_ALLOW_REMOTE=1 "
		             "allows it)";
	if (inet_pton(AF_INET6, h, &a6) == 1)
		return remote || IN6_IS_ADDR_LOOPBACK(&a6)
		           ? NULL
		           : "not a loopback address (HEAPPROF_HTTP_ALLOW_REMOTE=1 "
		             "allows it)";
	return "the host must be a numeric address or localhost";
}

static int
setenv_checked(const char *k, const char *v)
{
	if (setenv(k, v, 1) != 0) {
		cli_err("run: cannot set %s: %s", k, strerror(errno));
		return -1;
	}
	return 0;
}

int
cli_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{"rate", required_argument, NULL, 'r'},
		{"output", required_argument, NULL, 'o'},
		{"interval", required_argument, NULL, 'i'},
		{"signal", required_argument, NULL, 's'},
		{"text", no_argument, NULL, 't'},
		{"unwind", required_argument, NULL, 'u'},
		{"depth", required_argument, NULL, 'd'},
		{"no-exit-dump", no_argument, NULL, 'x'},
		{"write-empty", no_argument, NULL, 'E'},
		{"mode", required_argument, NULL, 'm'},
		{"http", required_argument, NULL, 'H'},
		{"push", required_argument, NULL, 'P'},
		{"app", required_argument, NULL, 'A'},
		{"symbolize", required_argument, NULL, 'S'},
		{"only", required_argument, NULL, 'O'},
		{"no-children", no_argument, NULL, 'C'},
		{"dump-growth", required_argument, NULL, 'G'},
		{"dump-limit", required_argument, NULL, 'L'},
		{"dump-usage", required_argument, NULL, 'U'},
		{"dump-pressure", required_argument, NULL, 'Q'},
		{"peak-file", required_argument, NULL, 'K'},
		{"peak-step", required_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	int64_t v;
	int sig;
	optind = 1;
	opterr = 0; /* one message of ours, below */
	/* '+': stop at the first non-option, so CMD's own flags are its. */
	while ((c = getopt_long(argc, argv, "+r:o:i:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (heapprof__parse_size(optarg, &v) != 0) {
				cli_err("run: -r '%s': expected a byte count such as "
				        "524288 or 512k", optarg);
				return 2;
			}
			if (setenv_checked("HEAPPROF_RATE", optarg))
				return 2;
			break;
		case 'o':
			if (!*optarg || optarg[0] == '-') {
				/* `-o -- cmd` would name the file "--" */
				cli_err("run: -o: expected a path, got '%s' (a path "
				        "starting with - needs ./)", optarg);
				return 2;
			}
			if (setenv_checked("HEAPPROF_OUT", optarg))
				return 2;
			break;
		case 'i':
			if (heapprof__parse_size(optarg, &v) != 0 ||
			    v > 86400 * 365) {
				cli_err("run: -i '%s': expected a number of seconds",
				        optarg);
				return 2;
			}
			if (setenv_checked("HEAPPROF_INTERVAL", optarg))
				return 2;
			break;
		case 's':
			if (heapprof__parse_signal(optarg, &sig) != 0) {
				cli_err("run: -s '%s': expected a catchable signal "
				        "such as USR2 or 12", optarg);
				return 2;
			}
			if (setenv_checked("HEAPPROF_SIGNAL", optarg))
				return 2;
			break;
		case 't':
			if (setenv_checked("HEAPPROF_FORMAT", "text"))
				return 2;
			break;
		case 'u':
			if (strcmp(optarg, "dwarf") && strcmp(optarg, "fp") &&
			    strcmp(optarg, "libunwind")) {
				cli_err("run: --unwind '%s': expected dwarf, fp or libunwind",
				        optarg);
				return 2;
			}
			if (setenv_checked("HEAPPROF_UNWIND", optarg))
				return 2;
			break;
		case 'd':
			if (heapprof__parse_size(optarg, &v) != 0 || v < 1 ||
			    v > 64) {
				cli_err("run: --depth '%s': expected 1..64", optarg);
				return 2;
			}
			if (setenv_checked("HEAPPROF_DEPTH", optarg))
				return 2;
			break;
		case 'x':
			if (setenv_checked("HEAPPROF_EXIT", "0"))
				return 2;
			break;
		case 'E':
			if (setenv_checked("HEAPPROF_WRITE_EMPTY", "1"))
				return 2;
			break;
		case 'm':
			if (strcmp(optarg, "delta") && strcmp(optarg, "cumulative")) {
				cli_err("run: --mode '%s': expected delta or cumulative",
				        optarg);
				return 2;
			}
			if (setenv_checked("HEAPPROF_MODE", optarg))
				return 2;
			break;
		case 'H': {
			const char *why = http_addr_problem(optarg);
			if (why) {
				cli_err("run: --http '%s': %s", optarg, why);
				return 2;
			}
			if (setenv_checked("HEAPPROF_HTTP", optarg))
				return 2;
			break;
		}
		case 'P':
			if (strncmp(optarg, "http://", 7) != 0) {
				cli_err("run: --push '%s': expected an http:// URL", optarg);
				return 2;
			}
			if (setenv_checked("HEAPPROF_PUSH", optarg))
				return 2;
			break;
		case 'S':
			if (strcmp(optarg, "symtab") && strcmp(optarg, "dwarf") &&
			    strcmp(optarg, "none")) {
				cli_err("run: --symbolize '%s': expected symtab, dwarf "
				        "or none", optarg);
				return 2;
			}
			if (setenv_checked("HEAPPROF_SYMBOLIZE", optarg))
				return 2;
			break;
		case 'A':
			if (setenv_checked("HEAPPROF_APP", optarg))
				return 2;
			break;
		case 'O':
			if (!*optarg) {
				cli_err("run: --only: empty pattern");
				return 2;
			}
			if (setenv_checked("HEAPPROF_ONLY", optarg))
				return 2;
			break;
		case 'C':
			if (setenv_checked("HEAPPROF_CHILDREN", "0"))
				return 2;
			break;
		case 'G':
			if (heapprof__parse_size(optarg, &v) != 0 || v == 0) {
				cli_err("run: --dump-growth '%s': expected a byte "
				        "count such as 64m", optarg);
				return 2;
			}
			if (setenv_checked("HEAPPROF_DUMP_GROWTH", optarg))
				return 2;
			break;
		case 'L': {
			char *end;
			double fr = strtod(optarg, &end);
			if (end == optarg || *end || !(fr > 0 && fr <= 1)) {
				cli_err("run: --dump-limit '%s': expected a fraction "
				        "in (0, 1] such as 0.9", optarg);
				return 2;
			}
			if (setenv_checked("HEAPPROF_DUMP_LIMIT", optarg))
				return 2;
			break;
		}
		case 'U':
		case 'T': {
			char *end;
			double fr = strtod(optarg, &end);
			double max = c == 'U' ? 1 : 10;
			if (end == optarg || *end || !(fr > 0 && fr <= max)) {
				cli_err("run: --%s '%s': expected a fraction in "
				        "(0, %g] such as %s",
				        c == 'U' ? "dump-usage" : "peak-step", optarg,
				        max, c == 'U' ? "0.9" : "0.1");
				return 2;
			}
			if (setenv_checked(c == 'U' ? "HEAPPROF_DUMP_USAGE"
			                            : "HEAPPROF_PEAK_STEP", optarg))
				return 2;
			break;
		}
		case 'Q':
			if (heapprof__parse_size(optarg, &v) != 0 || v < 1 || v > 1000) {
				cli_err("run: --dump-pressure '%s': expected ms of "
				        "stall per second, 1..1000", optarg);
				return 2;
			}
			if (setenv_checked("HEAPPROF_DUMP_PRESSURE", optarg))
				return 2;
			break;
		case 'K':
			if (!*optarg) {
				cli_err("run: --peak-file: expected a path");
				return 2;
			}
			if (setenv_checked("HEAPPROF_PEAK_FILE", optarg))
				return 2;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			cli_err("run: unknown option or missing value: '%s' "
			        "('heapprof run --help' lists the options)",
			        argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc && strcmp(argv[optind], "--") == 0)
		optind++;
	if (optind >= argc) {
		cli_err("run: no command given");
		usage(stderr);
		return 2;
	}
	char lib[PATH_MAX];
	int rc = find_library(lib, sizeof(lib));
	if (rc != 0) {
		const char *env = getenv("HEAPPROF_LIBRARY");
		if (env && *env)
			cli_err("run: HEAPPROF_LIBRARY='%s': %s", env,
			        heapprof_strerror(rc));
		else
			cli_err("run: cannot find libheapprof.so beside the heapprof "
			        "binary, in ../lib or in ../lib/heapprof (set "
			        "HEAPPROF_LIBRARY): %s", heapprof_strerror(rc));
		return 2;
	}
	/* Ours first, then whatever the user preloads already. */
	const char *old = getenv("LD_PRELOAD");
	size_t n = strlen(lib) + (old ? strlen(old) : 0) + 2;
	char *pre = malloc(n);
	if (!pre) {
		cli_err("run: out of memory");
		return 2;
	}
	snprintf(pre, n, "%s%s%s", lib, old && *old ? ":" : "", old ? old : "");
	if (setenv_checked("LD_PRELOAD", pre))
		return 2;
	free(pre);
	/* Relative to here, not to wherever the program chdir's. */
	if ((rc = cli_run_absolute_output())) {
		cli_err("run: cannot make the output path absolute: %s",
		        strerror(-rc));
		return 2;
	}
	cli_run_check_program(argv[optind]);
	const char *ed = getenv("HEAPPROF_EXIT");
	return cli_run_child(argv + optind, !(ed && !strcmp(ed, "0")));
}
