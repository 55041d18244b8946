/*
 * replay.c: a main() for the libFuzzer targets without libFuzzer, so the
 * seed corpus (and any crasher) runs under gcc in `make test`: every file
 * argument, and every file in every directory argument, is read and passed
 * to LLVMFuzzerTestOneInput once. A crash or a failed FUZZ_ASSERT aborts
 * the process, which fuzz/replay.sh reports as FAIL with the file name
 * printed just before.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	for (;;) {
		if (!buf)
			break;
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (n < cap)
			break;
		uint8_t *nb = realloc(buf, cap * 2);
		if (!nb) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = nb;
		cap *= 2;
	}
	fclose(f);
	if (!buf) {
		fprintf(stderr, "%s: out of memory\n", path);
		return -1;
	}
	fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
	/* An exact-size copy, so ASan sees reads past the end. */
	uint8_t *exact = malloc(n ? n : 1);
	if (exact && n)
		memcpy(exact, buf, n);
	free(buf);
	if (!exact)
		return -1;
	LLVMFuzzerTestOneInput(exact, n);
	free(exact);
	return 0;
}

int
main(int argc, char **argv)
{
	int files = 0, errors = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			errors++;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			errors += run_file(argv[i]) < 0;
			files++;
			continue;
		}
		DIR *d = opendir(argv[i]);
		if (!d) {
			perror(argv[i]);
			errors++;
			continue;
		}
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			size_t n = strlen(argv[i]) + strlen(e->d_name) + 2;
			char *p = malloc(n);
			if (!p) {
				errors++;
				break;
			}
			snprintf(p, n, "%s/%s", argv[i], e->d_name);
			errors += run_file(p) < 0;
			files++;
			free(p);
		}
		closedir(d);
	}
	printf("replayed %d files, %d unreadable\n", files, errors);
	return errors ? 1 : 0;
}
