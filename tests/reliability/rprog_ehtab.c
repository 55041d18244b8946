/*
 * rprog_ehtab: allocates one block, then prints "table P present N": how
 * many pages its own .eh_frame_hdr search table spans and how many of
 * them are mapped (/proc/self/pagemap's present bit), and "map 0011..."
 * (page by page, the first 255); then the same for its FDEs in
 * .eh_frame ("frames P present N", up to the table's last FDE). It is linked with
 * 40,000 empty functions (gen_ehfuncs.sh): a ~320 KB table, five times
 * the kernel's 64 KiB fault-around. Unprofiled, the table is never read
 * and few of its pages are mapped; a sampled malloc's unwind binary-
 * searches it for main, near its start, which maps the windows it probes
 * but not the last quarter. The unwinder makes a table present whole at
 * its first lookup, in one system call instead of a page fault per
 * window it probes (6 of them in cc1, 15-40 us each here).
 */
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uintptr_t tab_start, tab_end, fde_start, fde_end;

static int
on_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type != PT_GNU_EH_FRAME)
			continue;
		const uint8_t *hdr =
			(const uint8_t *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
		/* version 1, eh_frame_ptr sdata4|pcrel, count udata4, table
		 * datarel sdata4: what every linker writes */
		if (hdr[0] != 1 || hdr[1] != 0x1b || hdr[2] != 0x03 || hdr[3] != 0x3b)
			return 1;
		uint32_t count;
		int32_t ehf, last;
		memcpy(&count, hdr + 8, 4);
		memcpy(&ehf, hdr + 4, 4); /* pcrel: from hdr + 4 */
		memcpy(&last, hdr + 12 + (size_t)count * 8 - 4, 4); /* datarel */
		tab_start = (uintptr_t)hdr;
		tab_end = (uintptr_t)hdr + 12 + (uintptr_t)count * 8;
		fde_start = (uintptr_t)hdr + 4 + (intptr_t)ehf;
		fde_end = (uintptr_t)hdr + (intptr_t)last + 1;
		return 1;
	}
	return 1; /* the first object is the program */
}

/* Prints "NAME P present N" and "map 0011..." for the pages of
 * [start, end). */
static int
report(int fd, const char *name, uintptr_t start, uintptr_t end)
{
	long pages = 0, present = 0;
	char map[256] = "";
	for (uintptr_t a = start & ~(uintptr_t)4095; a < end; a += 4096) {
		uint64_t e;
		if (pread(fd, &e, 8, (off_t)(a / 4096 * 8)) != 8) {
			perror("pread");
			return 1;
		}
		pages++;
		present += (long)(e >> 63);
		if (pages <= (long)sizeof(map) - 1)
			map[pages - 1] = (e >> 63) ? '1' : '0';
	}
	printf("%s %ld present %ld\nmap %s\n", name, pages, present, map);
	return 0;
}

int
main(void)
{
	void *volatile p = malloc(100);
	free(p);
	dl_iterate_phdr(on_object, NULL);
	if (!tab_start) {
		printf("no table\n");
		return 1;
	}
	int fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0) {
		perror("pagemap");
		return 1;
	}
	if (report(fd, "table", tab_start, tab_end) ||
	    report(fd, "frames", fde_start, fde_end))
		return 1;
	close(fd);
	return 0;
}
