/*
 * repro: heapprof__elf_open's headers_present() trusts e_shoff, e_shnum
 * and e_shentsize before read_ehdr has checked anything (not even the ELF
 * magic), and makes present with MADV_POPULATE_READ everything from e_shoff
 * to min(e_shoff + e_shnum * e_shentsize, file size). A non-ELF file whose
 * byte 4 happens to be 1 or 2, or a corrupt ELF, is thus read in whole
 * (disk I/O, resident pages) before the open fails with -ENOEXEC.
 *
 * Makes a 256 MiB file (not sparse: real pages) that is not an ELF file
 * (no magic) but has byte 4 = 2, e_shoff = 4096, e_shnum = e_shentsize =
 * 0xffff; evicts it from our view, then opens it and reports the peak RSS
 * growth. Exit 1 if the failed open made more than 16 MiB resident.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <elf.h>
#include "elffile.h"

static long
hwm_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6))
			v = atol(line + 6);
	if (f)
		fclose(f);
	return v;
}

int
main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/tmp/hx_notelf.bin";
	size_t size = (size_t)256 << 20;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		perror(path);
		return 2;
	}
	static char buf[1 << 20];
	memset(buf, 0x5a, sizeof(buf));
	Elf64_Ehdr h;
	memset(&h, 0x5a, sizeof(h));
	memcpy(h.e_ident, "DATA", 4); /* not \177ELF */
	h.e_ident[EI_CLASS] = ELFCLASS64;
	h.e_shoff = 4096;
	h.e_shnum = 0xffff;
	h.e_shentsize = 0xffff;
	for (size_t off = 0; off < size; off += sizeof(buf)) {
		if (off == 0)
			memcpy(buf, &h, sizeof(h));
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
			perror("write");
			return 2;
		}
		if (off == 0)
			memset(buf, 0x5a, sizeof(h));
	}
	close(fd);
	long before = hwm_kib();
	heapprof_elf e;
	int rc = heapprof__elf_open(&e, path, 0);
	long after = hwm_kib();
	unlink(path);
	printf("elf_open rc %d, peak RSS %ld KiB -> %ld KiB (+%ld KiB)\n", rc,
	       before, after, after - before);
	if (rc == 0)
		heapprof__elf_close(&e);
	if (after - before > 16 * 1024) {
		printf("FAIL: a failed open of a non-ELF file made %ld MiB "
		       "resident\n", (after - before) / 1024);
		return 1;
	}
	printf("PASS\n");
	return 0;
}
