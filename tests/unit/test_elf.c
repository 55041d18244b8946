/*
 * test_elf.c: the ELF reader and the symbol cache. Hand-built ELF32/ELF64
 * images (exact lookup rules), this test binary (build id against
 * `readelf -n`, its own functions by runtime address), shared libraries
 * (libz's deflate, libc's malloc via .dynsym), and truncated, mutated and
 * garbage inputs, which must fail cleanly.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "elffile.h"
#include "heapprof.h"
#include "maps.h"
#include "test.h"
#include "../trapcount.h"

/* ------------------------------------------------------------------
 * A synthetic image, laid out identically for both classes:
 *   0x000 ehdr, 0x100 phdrs (3), 0x200 note, 0x300 strtab, 0x400 symtab,
 *   0x800 shdrs (5), PT_LOAD [0, 0x2000) at 0x400000 (r-x),
 *   PT_LOAD [0x2000, 0x2100) at 0x602000 (rw-). */
#define IMG_SIZE 0x2100
static const char img_strs[] =
	"\0alpha\0beta\0gamma\0__libc_alpha\0zero\0data\0walpha\0.x";
enum { S_ALPHA = 1, S_BETA = 7, S_GAMMA = 12, S_LALPHA = 18, S_ZERO = 31,
       S_DATA = 36, S_WALPHA = 41 };
static const uint8_t img_id[8] = {0x01, 0x23, 0x45, 0x67,
                                  0x89, 0xab, 0xcd, 0xef};

#define DEFINE_BUILDER(N)                                                      \
	static void build_elf##N(uint8_t *img)                                 \
	{                                                                      \
		memset(img, 0, IMG_SIZE);                                      \
		Elf##N##_Ehdr eh = {0};                                        \
		memcpy(eh.e_ident, ELFMAG, SELFMAG);                           \
		eh.e_ident[EI_CLASS] = ELFCLASS##N;                            \
		eh.e_ident[EI_DATA] = ELFDATA2LSB;                             \
		eh.e_ident[EI_VERSION] = EV_CURRENT;                           \
		eh.e_type = ET_EXEC;                                           \
		eh.e_version = EV_CURRENT;                                     \
		eh.e_phoff = 0x100;                                            \
		eh.e_phentsize = sizeof(Elf##N##_Phdr);                        \
		eh.e_phnum = 3;                                                \
		eh.e_shoff = 0x800;                                            \
		eh.e_shentsize = sizeof(Elf##N##_Shdr);                        \
		eh.e_shnum = 5;                                                \
		memcpy(img, &eh, sizeof(eh));                                  \
		Elf##N##_Phdr ph[3] = {                                        \
			{.p_type = PT_LOAD, .p_flags = PF_R | PF_X,            \
			 .p_offset = 0, .p_vaddr = 0x400000,                   \
			 .p_filesz = 0x2000, .p_memsz = 0x2000},               \
			{.p_type = PT_LOAD, .p_flags = PF_R | PF_W,            \
			 .p_offset = 0x2000, .p_vaddr = 0x602000,              \
			 .p_filesz = 0x100, .p_memsz = 0x300},                 \
			{.p_type = PT_NOTE, .p_flags = PF_R,                   \
			 .p_offset = 0x200, .p_filesz = 24, .p_align = 4},     \
		};                                                             \
		memcpy(img + 0x100, ph, sizeof(ph));                           \
		uint32_t nh[3] = {4, 8, NT_GNU_BUILD_ID};                      \
		memcpy(img + 0x200, nh, 12);                                   \
		memcpy(img + 0x20c, "GNU", 4);                                 \
		memcpy(img + 0x210, img_id, 8);                                \
		memcpy(img + 0x300, img_strs, sizeof(img_strs));               \
		Elf##N##_Sym sy[] = {                                          \
			{0},                                                   \
			{.st_name = S_LALPHA, .st_value = 0x401000,            \
			 .st_size = 0x100, .st_shndx = 1,                      \
			 .st_info = ELF##N##_ST_INFO(STB_GLOBAL, STT_FUNC)},   \
			{.st_name = S_WALPHA, .st_value = 0x401000,            \
			 .st_size = 0x100, .st_shndx = 1,                      \
			 .st_info = ELF##N##_ST_INFO(STB_WEAK, STT_FUNC)},     \
			{.st_name = S_ALPHA, .st_value = 0x401000,             \
			 .st_size = 0x100, .st_shndx = 1,                      \
			 .st_info = ELF##N##_ST_INFO(STB_GLOBAL, STT_FUNC)},   \
			{.st_name = S_BETA, .st_value = 0x401200,              \
			 .st_size = 0x10, .st_shndx = 1,                       \
			 .st_info = ELF##N##_ST_INFO(STB_LOCAL, STT_FUNC)},    \
			{.st_name = S_ZERO, .st_value = 0x401300,              \
			 .st_size = 0, .st_shndx = 1,                          \
			 .st_info = ELF##N##_ST_INFO(STB_LOCAL, STT_FUNC)},    \
			{.st_name = S_DATA, .st_value = 0x401400,              \
			 .st_size = 0x10, .st_shndx = 1,                       \
			 .st_info = ELF##N##_ST_INFO(STB_GLOBAL, STT_OBJECT)}, \
			{.st_name = S_GAMMA, .st_value = 0,                    \
			 .st_shndx = SHN_UNDEF,                                \
			 .st_info = ELF##N##_ST_INFO(STB_GLOBAL, STT_FUNC)},   \
			{.st_name = 0x7fff, .st_value = 0x401500,              \
			 .st_size = 4, .st_shndx = 1, /* name past strtab */   \
			 .st_info = ELF##N##_ST_INFO(STB_GLOBAL, STT_FUNC)},   \
			{.st_name = sizeof(img_strs) - 3, .st_value = 0x401600,\
			 .st_size = 4, .st_shndx = 1, /* unterminated name */  \
			 .st_info = ELF##N##_ST_INFO(STB_GLOBAL, STT_FUNC)},   \
		};                                                             \
		memcpy(img + 0x400, sy, sizeof(sy));                           \
		Elf##N##_Shdr sh[5] = {                                        \
			{0},                                                   \
			{.sh_type = SHT_PROGBITS, .sh_offset = 0x1000,         \
			 .sh_size = 0x1000},                                   \
			{.sh_type = SHT_SYMTAB, .sh_offset = 0x400,            \
			 .sh_size = sizeof(sy), .sh_link = 3,                  \
			 .sh_entsize = sizeof(Elf##N##_Sym)},                  \
			/* strtab size excludes the final NUL */               \
			{.sh_type = SHT_STRTAB, .sh_offset = 0x300,            \
			 .sh_size = sizeof(img_strs) - 1},                     \
			{.sh_type = SHT_NOTE, .sh_offset = 0x200,              \
			 .sh_size = 24},                                       \
		};                                                             \
		memcpy(img + 0x800, sh, sizeof(sh));                           \
	}
DEFINE_BUILDER(64)
DEFINE_BUILDER(32)

static void
check_synthetic(const heapprof_elf *e)
{
	CHECK_STR(e->build_id, "0123456789abcdef");
	CHECK_EQ(e->type, ET_EXEC);
	CHECK_EQ(e->nloads, 2);
	CHECK_EQ(e->sym_source, 1);
	CHECK_EQ(e->nsyms, 3); /* alpha (3 aliases), beta, zero */
	uint64_t v = 0, sa = 0;
	CHECK_EQ(heapprof__elf_file_to_vaddr(e, 0x1000, &v), 0);
	CHECK_EQ(v, 0x401000);
	CHECK_EQ(heapprof__elf_file_to_vaddr(e, 0x2050, &v), 0);
	CHECK_EQ(v, 0x602050);
	CHECK_EQ(heapprof__elf_file_to_vaddr(e, 0x2100, &v), -ENOENT);
	CHECK_EQ(heapprof__elf_runtime_to_vaddr(e, 0x555555555000ull, 0x1000,
	                                        0x555555555010ull, &v), 0);
	CHECK_EQ(v, 0x401010);
	CHECK_EQ(heapprof__elf_runtime_to_vaddr(e, 0x5000, 0, 0x4fff, &v),
	         -ENOENT);
	CHECK_STR(heapprof__elf_lookup(e, 0x401000, &sa), "alpha");
	CHECK_EQ(sa, 0x401000);
	CHECK_STR(heapprof__elf_lookup(e, 0x4010ff, NULL), "alpha");
	CHECK(heapprof__elf_lookup(e, 0x401100, NULL) == NULL);
	CHECK(heapprof__elf_lookup(e, 0x400fff, NULL) == NULL);
	CHECK(heapprof__elf_lookup(e, 0, NULL) == NULL);
	CHECK_STR(heapprof__elf_lookup(e, 0x401205, NULL), "beta");
	CHECK(heapprof__elf_lookup(e, 0x401210, NULL) == NULL);
	CHECK_STR(heapprof__elf_lookup(e, 0x401300, NULL), "zero");
	/* size 0: the nearest preceding symbol (the OBJECT is no function) */
	CHECK_STR(heapprof__elf_lookup(e, 0x401404, &sa), "zero");
	CHECK_EQ(sa, 0x401300);
	CHECK_STR(heapprof__elf_lookup(e, UINT64_MAX, NULL), "zero");
}

TEST(synthetic_elf64)
{
	static uint8_t img[IMG_SIZE];
	build_elf64(img);
	heapprof_elf e;
	REQUIRE_OK(heapprof__elf_parse(&e, img, IMG_SIZE, HEAPPROF_ELF_SYMBOLS));
	check_synthetic(&e);
	heapprof__elf_close(&e);
	heapprof__elf_close(&e);
	/* Without the flag: no symbols, the rest the same. */
	REQUIRE_OK(heapprof__elf_parse(&e, img, IMG_SIZE, 0));
	CHECK_EQ(e.nsyms, 0);
	CHECK(heapprof__elf_lookup(&e, 0x401000, NULL) == NULL);
	CHECK_STR(e.build_id, "0123456789abcdef");
	heapprof__elf_close(&e);
}

TEST(synthetic_elf32)
{
	static uint8_t img[IMG_SIZE];
	build_elf32(img);
	heapprof_elf e;
	REQUIRE_OK(heapprof__elf_parse(&e, img, IMG_SIZE, HEAPPROF_ELF_SYMBOLS));
	CHECK_EQ(e.is64, 0);
	check_synthetic(&e);
	heapprof__elf_close(&e);
}

/* Parses data[0..n) from an exact-size heap copy (so ASan sees overreads)
 * and touches everything a successful parse exposes. */
static int
parse_copy(const uint8_t *data, size_t n)
{
	uint8_t *copy = malloc(n ? n : 1);
	if (!copy)
		abort();
	memcpy(copy, data, n);
	heapprof_elf e;
	int rc = heapprof__elf_parse(&e, copy, n, HEAPPROF_ELF_SYMBOLS);
	if (rc == 0) {
		size_t sum = strlen(e.build_id);
		for (size_t i = 0; i < e.nsyms; i++) {
			sum += strlen(e.syms[i].name);
			const char *nm =
				heapprof__elf_lookup(&e, e.syms[i].addr, NULL);
			sum += nm ? strlen(nm) : 0;
		}
		uint64_t v;
		for (size_t i = 0; i < e.nloads; i++)
			(void)heapprof__elf_file_to_vaddr(&e, e.loads[i].offset,
			                                  &v);
		(void)sum;
		heapprof__elf_close(&e);
	}
	free(copy);
	return rc;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t
rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

TEST(hostile_synthetic)
{
	static uint8_t img[IMG_SIZE], mut[IMG_SIZE];
	build_elf64(img);
	/* Every truncation: the section table sits at 0x800, so any cut
	 * before its end (0x940) must be refused. */
	for (size_t n = 0; n < IMG_SIZE; n++) {
		int rc = parse_copy(img, n);
		if (n < 0x940 && rc != -ENOEXEC)
			T_FAIL("truncated at %zu: rc %d", n, rc);
	}
	/* Random byte, word and length corruptions of the headers, tables
	 * and strings, both classes. */
	for (int cls = 0; cls < 2; cls++) {
		if (cls)
			build_elf32(img);
		for (int it = 0; it < 20000; it++) {
			memcpy(mut, img, IMG_SIZE);
			int k = 1 + (int)(rnd() % 4);
			for (int j = 0; j < k; j++) {
				size_t at = rnd() % 0x940;
				uint64_t v = rnd();
				switch (rnd() % 3) {
				case 0: mut[at] = (uint8_t)v; break;
				case 1: mut[at] ^= (uint8_t)(1u << (v & 7)); break;
				default:
					if (at + 8 <= IMG_SIZE)
						memcpy(mut + at, &v, 8);
				}
			}
			int rc = parse_copy(mut, IMG_SIZE - (rnd() % 2) * (rnd() % IMG_SIZE));
			if (rc != 0 && rc != -ENOEXEC)
				T_FAIL("mutation %d: rc %d", it, rc);
		}
	}
	/* Garbage with and without the magic. */
	for (int it = 0; it < 2000; it++) {
		size_t n = rnd() % 512;
		for (size_t i = 0; i < n; i++)
			mut[i] = (uint8_t)rnd();
		if (it & 1 && n >= 6) {
			memcpy(mut, ELFMAG, SELFMAG);
			mut[EI_CLASS] = (uint8_t)(1 + (it >> 1) % 2);
			mut[EI_DATA] = ELFDATA2LSB;
		}
		int rc = parse_copy(mut, n);
		if (rc != 0 && rc != -ENOEXEC)
			T_FAIL("garbage %d: rc %d", it, rc);
	}
}

static char self_path[4096];

static const char *
self_exe(void)
{
	if (!self_path[0]) {
		ssize_t n = readlink("/proc/self/exe", self_path,
		                     sizeof(self_path) - 1);
		if (n > 0)
			self_path[n] = '\0';
	}
	return self_path;
}

static uint8_t *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return b;
}

TEST(hostile_real_file)
{
	size_t n;
	uint8_t *b = slurp(self_exe(), &n);
	REQUIRE(b != NULL);
	CHECK_EQ(parse_copy(b, n), 0);
	/* Truncations across the whole file (the section table is last). */
	for (size_t cut = 0; cut < n; cut += 1 + cut / 8)
		CHECK_EQ(parse_copy(b, cut), -ENOEXEC);
	CHECK_EQ(parse_copy(b, n - 1), -ENOEXEC);
	/* Mutations of the real headers and tables. */
	uint8_t *m = malloc(n);
	REQUIRE(m != NULL);
	for (int it = 0; it < 3000; it++) {
		memcpy(m, b, n);
		for (int j = 0; j < 3; j++) {
			size_t at = it % 2 ? rnd() % 4096 : n - 1 - rnd() % 4096;
			m[at % n] = (uint8_t)rnd();
		}
		int rc = parse_copy(m, n);
		if (rc != 0 && rc != -ENOEXEC)
			T_FAIL("mutation %d: rc %d", it, rc);
	}
	free(m);
	free(b);
}

TEST(open_errors)
{
	heapprof_elf e;
	char dir[] = "/tmp/heapprof_test_elf_XXXXXX";
	REQUIRE(mkdtemp(dir) != NULL);
	char path[256];
	snprintf(path, sizeof(path), "%s/garbage", dir);
	FILE *f = fopen(path, "wb");
	REQUIRE(f != NULL);
	for (int i = 0; i < 1000; i++)
		fputc((int)(rnd() & 0xff), f);
	fclose(f);
	CHECK_EQ(heapprof__elf_open(&e, path, HEAPPROF_ELF_SYMBOLS), -ENOEXEC);
	/* A truncated copy of this binary, on disk. */
	size_t n;
	uint8_t *b = slurp(self_exe(), &n);
	REQUIRE(b != NULL);
	f = fopen(path, "wb");
	REQUIRE(f != NULL);
	fwrite(b, 1, n / 2, f);
	fclose(f);
	free(b);
	CHECK_EQ(heapprof__elf_open(&e, path, HEAPPROF_ELF_SYMBOLS), -ENOEXEC);
	char hex[256];
	CHECK_EQ(heapprof__elf_build_id(path, hex, sizeof(hex)), -ENOEXEC);
	f = fopen(path, "wb"); /* empty */
	REQUIRE(f != NULL);
	fclose(f);
	CHECK_EQ(heapprof__elf_open(&e, path, 0), -ENOEXEC);
	unlink(path);
	/* A FIFO must not block; a directory and /dev/null are refused. */
	CHECK_EQ(mkfifo(path, 0600), 0);
	CHECK_EQ(heapprof__elf_open(&e, path, 0), -ENOEXEC);
	unlink(path);
	CHECK_EQ(heapprof__elf_open(&e, dir, 0), -ENOEXEC);
	CHECK_EQ(heapprof__elf_open(&e, "/dev/null", 0), -ENOEXEC);
	CHECK_EQ(heapprof__elf_open(&e, "/nonexistent/x", 0), -ENOENT);
	CHECK_EQ(heapprof__elf_build_id("/nonexistent/x", hex, sizeof(hex)),
	         -ENOENT);
	rmdir(dir);
}

/* An open reads nothing beyond the first page of a file that is not ELF,
 * or whose section header table is not ELF's, before it fails: the
 * header fields were used unchecked to make pages present
 * (MADV_POPULATE_READ), up to the whole file. Pages in the page cache
 * are counted with mincore on a mapping of our own, of a sparse file
 * whose holes are in no cache until read: those of its second half, which
 * no read-ahead from its first page reaches. */
static long
tail_cached(void *m, size_t size, unsigned char *vec)
{
	if (mincore(m, size, vec) != 0)
		return -1;
	long n = 0; /* the second half: beyond any read-ahead of the first page */
	for (size_t i = size / 4096 / 2; i < size / 4096; i++)
		n += vec[i] & 1;
	return n;
}

static long
open_reads_pages(const char *path, const uint8_t *head, size_t headlen,
                 size_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || pwrite(fd, head, headlen, 0) != (ssize_t)headlen ||
	    ftruncate(fd, (off_t)size) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -1;
	static unsigned char vec[(64 << 20) / 4096];
	long n = -1, before = -1;
	heapprof_elf e;
	int rc = -1;
	if (size / 4096 <= sizeof(vec) && (before = tail_cached(m, size, vec)) == 0) {
		rc = heapprof__elf_open(&e, path, 0);
		if (rc == 0)
			heapprof__elf_close(&e);
	}
	if (rc == -ENOEXEC)
		n = tail_cached(m, size, vec);
	else if (before > 0)
		n = -2; /* a file system without holes: cached as written */
	munmap(m, size);
	unlink(path);
	return n;
}

TEST(open_of_garbage_reads_little)
{
	char dir[] = "/tmp/heapprof_test_elf_XXXXXX";
	REQUIRE(mkdtemp(dir) != NULL);
	char path[256];
	snprintf(path, sizeof(path), "%s/big", dir);
	Elf64_Ehdr h;
	memset(&h, 0x5a, sizeof(h));
	h.e_ident[EI_CLASS] = ELFCLASS64;
	h.e_shoff = 4096;
	h.e_shnum = 0xffff;
	h.e_shentsize = 0xffff;
	size_t size = (size_t)64 << 20;
	/* Not ELF at all (byte 4 says 64-bit, as in any file by chance). */
	memcpy(h.e_ident, "DATA", 4);
	long n = open_reads_pages(path, (const uint8_t *)&h, sizeof(h), size);
	if (n == -2) {
		printf("  (skipped: %s holds no holes)\n", dir);
		rmdir(dir);
		return;
	}
	CHECK(n >= 0 && n < 64);
	if (!(n >= 0 && n < 64))
		printf("  not ELF: %ld of the last %zu pages read\n", n, size / 8192);
	/* ELF, with section headers of 65,535 bytes each. */
	memcpy(h.e_ident, ELFMAG, SELFMAG);
	n = open_reads_pages(path, (const uint8_t *)&h, sizeof(h), size);
	CHECK(n >= 0 && n < 64);
	if (!(n >= 0 && n < 64))
		printf("  bad entry size: %ld of the last %zu pages read\n", n, size / 8192);
	rmdir(dir);
}

/* The build id as `readelf -n` prints it, or "" if readelf is missing. */
static int
readelf_build_id(const char *path, char *out, size_t cap)
{
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", path);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	char line[512];
	int found = 0;
	while (fgets(line, sizeof(line), p)) {
		const char *k = strstr(line, "Build ID: ");
		if (k && !found) {
			k += strlen("Build ID: ");
			size_t n = strcspn(k, " \r\n");
			if (n < cap) {
				memcpy(out, k, n);
				out[n] = '\0';
				found = 1;
			}
		}
	}
	int st = pclose(p);
	return found ? 0 : st == 0 ? -2 : -1;
}

static void
check_build_id(const char *path)
{
	char want[256], got[256];
	int rc = readelf_build_id(path, want, sizeof(want));
	if (rc == -1) {
		char n[300];
		snprintf(n, sizeof(n), "build_id %s", path);
		T_SKIP_TOOL(n, "readelf", "binutils");
		return;
	}
	int n = heapprof__elf_build_id(path, got, sizeof(got));
	if (rc == -2) { /* readelf ran and found no build id */
		CHECK_EQ(n, -ENODATA);
		return;
	}
	CHECK_EQ(n, (long long)strlen(want));
	CHECK_STR(got, want);
	/* Too small a buffer is refused, not truncated. */
	CHECK_EQ(heapprof__elf_build_id(path, got, strlen(want)), -ERANGE);
}

static const heapprof_maps_entry *
self_mapping(heapprof_maps *m, const void *addr)
{
	return heapprof__maps_find(m, (uint64_t)(uintptr_t)addr);
}

TEST(build_id_matches_readelf)
{
	check_build_id(self_exe());
	heapprof_maps m;
	REQUIRE_OK(heapprof__maps_read_self(&m));
	const heapprof_maps_entry *e = self_mapping(&m, (const void *)&getpid);
	REQUIRE(e != NULL);
	check_build_id(e->path);
	e = self_mapping(&m, dlsym(RTLD_DEFAULT, "deflate"));
	REQUIRE(e != NULL);
	check_build_id(e->path);
	heapprof__maps_free(&m);
}

int main(void);
int some_function(int x);

__attribute__((noinline)) int
some_function(int x)
{
	volatile int acc = x;
	for (int i = 0; i < x; i++)
		acc += i * 3;
	return acc;
}

__attribute__((noinline)) static int
static_helper(int x)
{
	volatile int acc = x;
	return acc * 7 + some_function(x);
}

/* Symbolizes `addr` the way the encoder will: mapping from /proc/self/maps
 * (executable entries), then the symbol cache. */
static const char *
symbolize(heapprof_symcache *c, const heapprof_maps *m, const void *p,
          long delta, heapprof_mapping *out)
{
	uint64_t addr = (uint64_t)(uintptr_t)p + (uint64_t)delta;
	const heapprof_maps_entry *e = heapprof__maps_find(m, addr);
	if (!e)
		return NULL;
	*out = (heapprof_mapping){e->start, e->limit, e->offset, e->path, NULL};
	return heapprof__symcache_symbolize(c, addr, out);
}

TEST(symbolize_self_and_libs)
{
	heapprof_maps m;
	REQUIRE_OK(heapprof__maps_read_self(&m));
	heapprof__maps_keep_exec(&m);
	heapprof_symcache *c = heapprof__symcache_new();
	REQUIRE(c != NULL);
	heapprof_mapping hm;
	CHECK_STR(symbolize(c, &m, (const void *)&some_function, 0, &hm),
	          "some_function");
	CHECK_STR(symbolize(c, &m, (const void *)&some_function, 5, &hm),
	          "some_function");
	CHECK_STR(hm.file, self_exe());
	CHECK_STR(symbolize(c, &m, (const void *)&static_helper, 3, &hm),
	          "static_helper");
	CHECK_STR(symbolize(c, &m, (const void *)&main, 0, &hm), "main");

	/* libz, by .symtab or .dynsym; referenced so it is linked. */
	CHECK(zlibVersion() != NULL);
	void *df = dlsym(RTLD_DEFAULT, "deflate");
	REQUIRE(df != NULL);
	CHECK_STR(symbolize(c, &m, df, 0, &hm), "deflate");
	CHECK_STR(symbolize(c, &m, df, 9, &hm), "deflate");
	CHECK(strstr(hm.file, "libz") != NULL);

	/* libc's malloc: Debian's libc has only .dynsym, where malloc and
	 * __libc_malloc share an address; the plain name wins. */
	void *ma = dlsym(RTLD_DEFAULT, "malloc");
	REQUIRE(ma != NULL);
	const char *nm = symbolize(c, &m, ma, 16, &hm);
	if (strstr(hm.file, "libc.so")) {
		CHECK_STR(nm, "malloc");
	} else {
		printf("SKIP malloc: malloc is interposed from %s\n", hm.file);
	}
	nm = symbolize(c, &m, (const void *)&getpid, 0, &hm);
	CHECK(strstr(hm.file, "libc.so") != NULL);
	CHECK(nm != NULL && strstr(nm, "getpid") != NULL);

	/* A wrong build id refuses to symbolize; the right one is fine. */
	char id[256];
	REQUIRE(heapprof__elf_build_id(self_exe(), id, sizeof(id)) > 0);
	symbolize(c, &m, (const void *)&some_function, 0, &hm);
	hm.build_id = "00112233";
	CHECK(heapprof__symcache_lookup(
		      c, &hm, (uint64_t)(uintptr_t)&some_function) == NULL);
	hm.build_id = id;
	CHECK_STR(heapprof__symcache_lookup(
			  c, &hm, (uint64_t)(uintptr_t)&some_function),
	          "some_function");

	/* No file, [vdso], a missing file, an address outside: NULL. */
	heapprof_mapping bad = {0x1000, 0x2000, 0, NULL, NULL};
	CHECK(heapprof__symcache_lookup(c, &bad, 0x1800) == NULL);
	bad.file = "[vdso]";
	CHECK(heapprof__symcache_lookup(c, &bad, 0x1800) == NULL);
	bad.file = "/nonexistent/lib.so";
	CHECK(heapprof__symcache_lookup(c, &bad, 0x1800) == NULL);
	CHECK(heapprof__symcache_lookup(c, &bad, 0x1800) == NULL); /* cached */
	bad.file = self_exe();
	CHECK(heapprof__symcache_lookup(c, &bad, 0x800) == NULL);
	CHECK(heapprof__symcache_lookup(NULL, &bad, 0x1800) == NULL);
	heapprof__symcache_free(c);
	heapprof__symcache_free(NULL);
	heapprof__maps_free(&m);
	CHECK(static_helper(3) > 0);
}

/* heapprof__elf_lookup_many (one pass, no sort) gives what the sorted
 * table gives, for every address asked: the synthetic image's cases,
 * then every 7th byte of the executable segments of real files (this
 * binary's .symtab, libc's and libz's .dynsym, and cc1's if installed). */
static size_t
compare_many(const heapprof_elf *full, const heapprof_elf *bare,
             const uint64_t *v, size_t n)
{
	const char **names = malloc(n * sizeof(*names));
	if (!names || heapprof__elf_lookup_many(bare, v, n, names) != 0) {
		free(names);
		return n + 1;
	}
	size_t diff = 0;
	for (size_t i = 0; i < n; i++) {
		const char *want = heapprof__elf_lookup(full, v[i], NULL);
		if (want != names[i] && (!want || !names[i] || strcmp(want, names[i]))) {
			if (diff++ < 5)
				printf("  0x%llx: table %s, one pass %s\n",
				       (unsigned long long)v[i], want ? want : "(none)",
				       names[i] ? names[i] : "(none)");
		}
	}
	free(names);
	return diff;
}

TEST(lookup_many_matches_the_table)
{
	static uint8_t img[IMG_SIZE];
	build_elf64(img);
	heapprof_elf full, bare;
	REQUIRE_OK(heapprof__elf_parse(&full, img, IMG_SIZE, HEAPPROF_ELF_SYMBOLS));
	REQUIRE_OK(heapprof__elf_parse(&bare, img, IMG_SIZE, 0));
	static const uint64_t v[] = {0, 0x400fff, 0x401000, 0x4010ff, 0x401100,
	                             0x401205, 0x401210, 0x401300, 0x401404,
	                             UINT64_MAX};
	CHECK_EQ(compare_many(&full, &bare, v, sizeof(v) / sizeof(*v)), 0);
	const char *one;
	CHECK_EQ(heapprof__elf_lookup_many(&bare, v + 2, 1, &one), 0);
	CHECK_STR(one, "alpha");
	heapprof__elf_close(&full);
	heapprof__elf_close(&bare);

	CHECK(zlibVersion() != NULL);
	Dl_info di;
	const char *files[4] = {self_exe(), NULL, NULL,
	                        "/usr/lib/gcc/x86_64-linux-gnu/12/cc1"};
	if (dladdr((void *)&getpid, &di))
		files[1] = di.dli_fname;
	if (dladdr(dlsym(RTLD_DEFAULT, "deflate"), &di))
		files[2] = di.dli_fname;
	for (int f = 0; f < 4; f++) {
		if (!files[f] || access(files[f], R_OK) != 0) {
			printf("  (%s: not found, skipped)\n", files[f] ? files[f] : "?");
			continue;
		}
		REQUIRE_OK(heapprof__elf_open(&full, files[f], HEAPPROF_ELF_SYMBOLS));
		REQUIRE_OK(heapprof__elf_open(&bare, files[f], 0));
		size_t n = 0, cap = 0;
		uint64_t *vs = NULL;
		for (size_t l = 0; l < full.nloads; l++) {
			const heapprof_elf_load *ld = &full.loads[l];
			if (!(ld->flags & PF_X))
				continue;
			for (uint64_t a = ld->vaddr; a < ld->vaddr + ld->memsz; a += 7) {
				if (n == cap) {
					cap = cap ? 2 * cap : 4096;
					vs = realloc(vs, cap * sizeof(*vs));
					REQUIRE(vs != NULL);
				}
				vs[n++] = a;
			}
		}
		size_t d = compare_many(&full, &bare, vs, n);
		if (d)
			printf("  %s: %zu of %zu addresses differ\n", files[f], d, n);
		CHECK_EQ(d, 0);
		/* Sparse and clustered, as a profile's PCs are: a few runs of
		 * neighbours far apart (every 7th address of every 4099th
		 * run of 64). */
		size_t m = 0;
		for (size_t i = 0; i < n; i++)
			if ((i / 64) % 4099 == 0)
				vs[m++] = vs[i];
		d = compare_many(&full, &bare, vs, m);
		if (d)
			printf("  %s: %zu of %zu sparse addresses differ\n", files[f], d, m);
		CHECK_EQ(d, 0);
		CHECK(full.nsyms > 0);
		free(vs);
		heapprof__elf_close(&full);
		heapprof__elf_close(&bare);
	}
}

/* An open maps the pages it reads first, the ELF header's and the section
 * header table's, with MADV_POPULATE_READ rather than a page-fault trap
 * each (15-40 us on this VM, 3-5 files per exit dump): counted with the
 * software perf counter of page faults, which counts traps and not pages
 * made present by the system call. The second open of each file is
 * measured, so that the allocator's pages are warm. */
static long
open_traps(const char *path, int *err)
{
	int fd = trap_counter();
	if (fd < 0) {
		*err = errno;
		return -1;
	}
	heapprof_elf e;
	long n = -1;
	if (heapprof__elf_open(&e, path, 0) == 0) {
		heapprof__elf_close(&e);
		trap_start(fd);
		int rc = heapprof__elf_open(&e, path, 0);
		uint64_t v = trap_stop(fd);
		if (rc == 0 && v != UINT64_MAX)
			n = (long)v;
		if (rc == 0)
			heapprof__elf_close(&e);
	}
	close(fd);
	*err = 0;
	return n;
}

static void
test_open_takes_no_traps(void)
{
	void *m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int populate = m != MAP_FAILED && madvise(m, 4096, 22 /* POPULATE_READ */) == 0;
	if (m != MAP_FAILED)
		munmap(m, 4096);
	heapprof_maps mp;
	if (heapprof__maps_read_self(&mp) != 0) {
		printf("FAIL open_takes_no_traps\n");
		t_failed_total++;
		return;
	}
	const heapprof_maps_entry *libc = self_mapping(&mp, (const void *)&getpid);
	const char *paths[2] = {self_exe(), libc ? libc->path : "/bin/sh"};
	int err = 0;
	long traps[2];
	for (int i = 0; i < 2; i++)
		traps[i] = open_traps(paths[i], &err);
	heapprof__maps_free(&mp);
	if (err || !populate) {
		printf("SKIP open_takes_no_traps: %s\n",
		       err ? strerror(err) : "no MADV_POPULATE_READ (Linux < 5.14)");
		return;
	}
	t_case_failed = 0;
	for (int i = 0; i < 2; i++) {
		if (traps[i] != 0)
			printf("  %s: %ld page-fault traps in heapprof__elf_open\n",
			       paths[i], traps[i]);
		CHECK_EQ(traps[i], 0);
	}
	if (t_case_failed) {
		t_failed_total++;
		printf("FAIL open_takes_no_traps\n");
	} else {
		t_passed_total++;
		printf("PASS open_takes_no_traps\n");
	}
}

int
main(void)
{
	RUN(synthetic_elf64);
	RUN(synthetic_elf32);
	RUN(hostile_synthetic);
	RUN(hostile_real_file);
	RUN(open_errors);
	RUN(build_id_matches_readelf);
	RUN(symbolize_self_and_libs);
	RUN(lookup_many_matches_the_table);
	RUN(open_of_garbage_reads_little);
	test_open_takes_no_traps(); /* prints PASS, FAIL or SKIP itself */
	TEST_MAIN_END();
}
