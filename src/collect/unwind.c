/*
 * unwind.c: the default unwinder, x86_64 DWARF call-frame information
 * (.eh_frame) read in place, with a lock-free cache of one rule per
 * return address.
 *
 * Per frame, the steady state is a table lookup and two or three loads:
 * the rule for a return address says where the caller's frame starts (the
 * CFA, rsp or rbp plus an offset), that the return address sits just
 * below it, and where rbp was saved, if it was. A miss finds the object
 * with glibc's lock-free _dl_find_object (2.35+), binary-searches its
 * .eh_frame_hdr table, parses the FDE and its CIE and runs the CFA program
 * up to the address; the result is published in the cache with one atomic
 * store. What is not understood (DWARF expressions, a CFA on another
 * register) stops the walk cleanly; a frame without any CFI (JIT code,
 * assembly without directives) is stepped over with its frame pointer if
 * that looks sound. glibc's signal trampoline (__restore_rt, recognised by
 * its code bytes) is stepped through the ucontext the kernel saved.
 *
 * Why not libunwind: after its first unwind, libunwind 1.6 keeps a pipe
 * on the lowest free fds (3 and 4 in most programs) to validate addresses,
 * and every unwind then reads from and writes process memory to those
 * fds, which the program may have reused for its own files; it also needs
 * about 3 KiB more stack. Why not libgcc's _Unwind_Backtrace: about 20
 * times slower (it parses the CFI of every frame every time).
 *
 * Memory safety: no read is made outside memory known to be mapped: the
 * current thread's stack from the lowest stack pointer seen upwards
 * (stack pointers only grow while unwinding), or pages that mincore()
 * reports mapped and resident (stacks that are not the thread's own:
 * coroutines, sigaltstack), validated per capture, at most a few
 * syscalls. CFI tables are those of loaded objects, read in place, with
 * every length bounded. No fd, no lock, no allocation, no syscall on the
 * common path, no call through a lazily bound PLT slot; stack use about
 * 300 bytes on a cache hit, under 1 KiB on a miss (gcc -fstack-usage):
 * usable from a signal handler and on small coroutine stacks.
 *
 * Shared state: `cache` and `hdr_present` (below). A stale rule (an object unloaded and
 * another mapped at the same address) can give a wrong frame, never an
 * unchecked read.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>

#include "collect.h"

#pragma weak _dl_find_object /* glibc 2.35+; older: frame pointers only */
/* Bound when the library is loaded (a data relocation): a lazily bound
 * call would run the dynamic linker's resolver, which saves the whole
 * register file on the stack (2.5 KiB), inside a sampled malloc. */
static int (*const find_object)(void *, struct dl_find_object *) =
	_dl_find_object;

/* ------------------------------------------------------------------ rules */

/* A rule in 28 bits: kind (3), CFA offset / 8 (13), rbp slot (6): rbp was
 * saved at CFA - 8 * slot, 0 = rbp unchanged. The return address is always
 * at CFA - 8 (other layouts are not cached). */
enum {
	R_EMPTY = 0,
	R_RSP = 1,   /* CFA = rsp + off */
	R_RBP = 2,   /* CFA = rbp + off */
	R_STOP = 3,  /* outermost frame, or CFI not understood */
	R_FP = 4,    /* no CFI: frame-pointer step, if it looks sound */
	R_SIGRET = 5, /* glibc's __restore_rt: the ucontext is at rsp */
};
#define RULE(kind, off8, slot)                                                 \
	((uint32_t)(kind) | (uint32_t)(off8) << 3 | (uint32_t)(slot) << 16)
#define RULE_KIND(r) ((r)&7u)
/* The CFA offset in bytes is r & 0xfff8; rbp's slot * 8 is (r >> 13) & 0x1f8. */
#define RULE_BITS 28
#define OFF8_MAX 0x1fff
#define SLOT_MAX 0x3f

/* The cache: direct-mapped, 8192 words of 64 bits (64 KiB of bss, made
 * present at the first miss: cache_present). A word is (key >> CBITS) << RULE_BITS | rule, where
 * key is the looked-up address; the slot index is the key's low bits xor
 * the next ones, which the stored high bits give back, so word and slot
 * together name one key (an empty word, tag 0, names none).
 * Any thread writes a slot with one relaxed atomic store, and reads it
 * with one relaxed atomic load: a word is a whole entry, so a reader sees
 * an old entry, a new one, or empty, never a mix. Addresses above 2^49
 * (5-level paging) are not cached. */
#define CBITS 13
#define CSIZE (1u << CBITS)
static _Atomic uint64_t cache[CSIZE] HP_BIG_BSS __attribute__((aligned(4096)));
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels say EINVAL */
#endif

HP_INLINE uint32_t
cache_slot(uintptr_t key)
{
	return (uint32_t)((key ^ (key >> CBITS)) & (CSIZE - 1));
}

/* ------------------------------------------------------------- CFI parsing */

/* Reads an unsigned LEB128, not past `end`. */
static int
uleb(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	for (unsigned sh = 0; p < end && sh < 64; sh += 7) {
		uint8_t b = *p++;
		v |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80)) {
			*pp = p;
			*out = v;
			return 0;
		}
	}
	return -1;
}

static int
sleb(const uint8_t **pp, const uint8_t *end, int64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	for (unsigned sh = 0; p < end && sh < 64;) {
		uint8_t b = *p++;
		v |= (uint64_t)(b & 0x7f) << sh;
		sh += 7;
		if (!(b & 0x80)) {
			if (sh < 64 && (b & 0x40))
				v |= ~(uint64_t)0 << sh;
			*pp = p;
			*out = (int64_t)v;
			return 0;
		}
	}
	return -1;
}

/* Reads a pointer in DW_EH_PE encoding `enc`; `datarel` is the base of
 * DW_EH_PE_datarel. Indirect, textrel and funcrel are not supported. */
static int
read_enc(const uint8_t **pp, const uint8_t *end, uint8_t enc, uintptr_t datarel,
         uintptr_t *out)
{
	const uint8_t *p = *pp;
	uintptr_t base = 0;
	uint64_t v;
	if (enc == 0xff)
		return -1;
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: base = (uintptr_t)p; break;
	case 0x30: base = datarel; break;
	default: return -1;
	}
	if (enc & 0x80)
		return -1;
	int64_t s;
	unsigned size = 0;
	switch (enc & 0x0f) {
	case 0x00: case 0x04: case 0x0c: size = 8; break;
	case 0x02: case 0x0a: size = 2; break;
	case 0x03: case 0x0b: size = 4; break;
	case 0x01: if (uleb(&p, end, &v)) return -1; break;
	case 0x09: if (sleb(&p, end, &s)) return -1; v = (uint64_t)s; break;
	default: return -1;
	}
	if (size) { /* little-endian, sign-extended for the sdata forms */
		if (end - p < (ptrdiff_t)size)
			return -1;
		v = 0;
		memcpy(&v, p, size);
		p += size;
		if ((enc & 0x08) && size < 8 && (v >> (size * 8 - 1)) & 1)
			v |= ~(uint64_t)0 << (size * 8);
	}
	*pp = p;
	*out = base + (uintptr_t)v;
	return 0;
}

/* One entry of .eh_frame (CIE or FDE): its contents [*body, *end) after
 * the length word. 0, or -1 for a terminator or a bad length. */
static int
entry_bounds(const uint8_t *e, const uint8_t **body, const uint8_t **end)
{
	uint32_t len32;
	memcpy(&len32, e, 4);
	if (len32 == 0 || len32 == 0xffffffffu || len32 > (1u << 24))
		return -1; /* 64-bit lengths are not used in .eh_frame */
	*body = e + 4;
	*end = e + 4 + len32;
	return 0;
}

typedef struct cie_info {
	const uint8_t *insn, *end; /* initial instructions */
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_enc;
	uint8_t has_z, signal;
	uint64_t ra_reg;
} cie_info;

static int
parse_cie(const uint8_t *cie, cie_info *c)
{
	const uint8_t *p, *end;
	if (entry_bounds(cie, &p, &end) || end - p < 5)
		return -1;
	uint32_t id;
	memcpy(&id, p, 4);
	p += 4;
	if (id != 0)
		return -1;
	uint8_t ver = *p++;
	if (ver != 1 && ver != 3)
		return -1;
	const char *aug = (const char *)p;
	while (p < end && *p)
		p++;
	if (p >= end)
		return -1;
	p++;
	c->fde_enc = 0; /* absptr */
	c->has_z = aug[0] == 'z';
	c->signal = 0;
	if (uleb(&p, end, &c->code_align) || sleb(&p, end, &c->data_align))
		return -1;
	if (ver == 1) {
		if (p >= end)
			return -1;
		c->ra_reg = *p++;
	} else if (uleb(&p, end, &c->ra_reg))
		return -1;
	const uint8_t *aug_end = NULL;
	if (c->has_z) {
		uint64_t alen;
		if (uleb(&p, end, &alen) || alen > (uint64_t)(end - p))
			return -1;
		aug_end = p + alen;
	} else if (aug[0])
		return -1; /* "eh" and other old forms */
	for (const char *a = aug + c->has_z; *a; a++) {
		uintptr_t ignored;
		switch (*a) {
		case 'R': if (p >= aug_end) return -1; c->fde_enc = *p++; break;
		case 'L': if (p >= aug_end) return -1; p++; break;
		case 'P':
			if (p >= aug_end) return -1;
			uint8_t penc = *p++; /* skipped: only its size matters */
			if (read_enc(&p, aug_end, penc & 0x0f, 0, &ignored))
				return -1;
			break;
		case 'S': c->signal = 1; break;
		default: p = aug_end; a = "x"; break; /* unknown: skip the rest */
		}
	}
	if (aug_end)
		p = aug_end;
	c->insn = p;
	c->end = end;
	return 0;
}

/* The rule of one register we track. */
enum { H_SAME = 0, H_OFF, H_UNDEF, H_BAD };
typedef struct cfi_row {
	int32_t cfa_off; /* saturated: out-of-range values fail the checks */
	int32_t bp_off, ra_off;
	uint8_t cfa_reg;  /* DWARF number; 0xff: an expression */
	uint8_t bp_how, ra_how;
} cfi_row;

/* a * b, saturated to int32 (no overflow on hostile CFI). */
static int32_t
off32(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_mul_overflow(a, b, &r) || r > INT32_MAX)
		return INT32_MAX;
	return r < -INT32_MAX ? -INT32_MAX : (int32_t)r;
}

static int64_t
u31(uint64_t u)
{
	return u > INT32_MAX ? INT32_MAX : (int64_t)u;
}

#define DW_RBP 6
#define DW_RSP 7
#define DW_RA 16
#define REMEMBER_MAX 6

/* Runs CFA instructions [p, end) from location `loc` while the location is
 * at most `target`. `init` is the row after the CIE (for DW_CFA_restore),
 * NULL while running the CIE. 0, or -1 on what is not understood. */
static int
run_cfa(const uint8_t *p, const uint8_t *end, const cie_info *c, uintptr_t loc,
        uintptr_t target, cfi_row *row, const cfi_row *init)
{
	cfi_row saved[REMEMBER_MAX];
	int nsaved = 0;
	for (int steps = 0; p < end && steps < 4096; steps++) {
		uint8_t op = *p++;
		uint64_t reg = 0, u = 0, delta = 0;
		int64_t s = 0;
		int how = -1;
		int64_t off = 0;
		switch (op >> 6) {
		case 1: delta = op & 0x3f; goto advance;
		case 2: reg = op & 0x3f;
			if (uleb(&p, end, &u)) return -1;
			how = H_OFF; off = off32(u31(u), c->data_align); goto set;
		case 3: reg = op & 0x3f; goto restore;
		default: break;
		}
		switch (op) {
		case 0x00: continue; /* nop */
		case 0x01: { uintptr_t a; /* set_loc */
			if (read_enc(&p, end, c->fde_enc, 0, &a)) return -1;
			if (a > target) return 0;
			loc = a; continue; }
		case 0x02: if (p >= end) return -1; delta = *p++; goto advance;
		case 0x03: { uint16_t x; if (end - p < 2) return -1;
			memcpy(&x, p, 2); p += 2; delta = x; goto advance; }
		case 0x04: { uint32_t x; if (end - p < 4) return -1;
			memcpy(&x, p, 4); p += 4; delta = x; goto advance; }
		case 0x05: case 0x2f: /* offset_extended, GNU negative */
			if (uleb(&p, end, &reg) || uleb(&p, end, &u)) return -1;
			how = H_OFF; off = off32(u31(u), c->data_align);
			if (op == 0x2f) off = -off;
			goto set;
		case 0x11: /* offset_extended_sf */
			if (uleb(&p, end, &reg) || sleb(&p, end, &s)) return -1;
			how = H_OFF; off = off32(s, c->data_align); goto set;
		case 0x06: if (uleb(&p, end, &reg)) return -1; goto restore;
		case 0x07: if (uleb(&p, end, &reg)) return -1; how = H_UNDEF; goto set;
		case 0x08: if (uleb(&p, end, &reg)) return -1; how = H_SAME; goto set;
		case 0x09: if (uleb(&p, end, &reg) || uleb(&p, end, &u)) return -1;
			how = H_BAD; goto set; /* register(reg, u) */
		case 0x14: case 0x15: /* val_offset(_sf) */
			if (uleb(&p, end, &reg)) return -1;
			if (op == 0x14 ? uleb(&p, end, &u) : sleb(&p, end, &s)) return -1;
			how = H_BAD; goto set;
		case 0x10: case 0x16: /* expression, val_expression */
			if (uleb(&p, end, &reg) || uleb(&p, end, &u) ||
			    u > (uint64_t)(end - p)) return -1;
			p += u; how = H_BAD; goto set;
		case 0x0a:
			if (nsaved == REMEMBER_MAX) return -1;
			saved[nsaved++] = *row; continue;
		case 0x0b:
			if (nsaved == 0) return -1;
			*row = saved[--nsaved]; continue;
		case 0x0c: if (uleb(&p, end, &reg) || uleb(&p, end, &u)) return -1;
			row->cfa_reg = reg < 0xff ? (uint8_t)reg : 0xff;
			row->cfa_off = off32(u31(u), 1); continue;
		case 0x12: if (uleb(&p, end, &reg) || sleb(&p, end, &s)) return -1;
			row->cfa_reg = reg < 0xff ? (uint8_t)reg : 0xff;
			row->cfa_off = off32(s, c->data_align); continue;
		case 0x0d: if (uleb(&p, end, &reg)) return -1;
			row->cfa_reg = reg < 0xff ? (uint8_t)reg : 0xff; continue;
		case 0x0e: if (uleb(&p, end, &u)) return -1;
			row->cfa_off = off32(u31(u), 1); continue;
		case 0x13: if (sleb(&p, end, &s)) return -1;
			row->cfa_off = off32(s, c->data_align); continue;
		case 0x0f: /* def_cfa_expression */
			if (uleb(&p, end, &u) || u > (uint64_t)(end - p)) return -1;
			p += u; row->cfa_reg = 0xff; continue;
		case 0x2e: if (uleb(&p, end, &u)) return -1; continue; /* args_size */
		default: return -1;
		}
	advance:
		loc += delta * c->code_align;
		if (loc > target)
			return 0;
		continue;
	restore:
		if (!init)
			return -1;
		if (reg == DW_RBP) {
			row->bp_how = init->bp_how;
			row->bp_off = init->bp_off;
		} else if (reg == DW_RA) {
			row->ra_how = init->ra_how;
			row->ra_off = init->ra_off;
		}
		continue;
	set:
		if (reg == DW_RBP) {
			row->bp_how = (uint8_t)how;
			row->bp_off = (int32_t)off;
		} else if (reg == DW_RA) {
			row->ra_how = (uint8_t)how;
			row->ra_off = (int32_t)off;
		}
		continue;
	}
	return 0;
}

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14; older kernels say EINVAL */
#endif

/* The .eh_frame_hdr tables made present, by address; a full list makes
 * no more. Any thread adds one with a compare-and-swap on a free slot; a
 * race between two threads on one table makes it present twice,
 * harmlessly. */
#define NPRESENT 32
static _Atomic uintptr_t hdr_present[NPRESENT];

/* An object's search table and its FDEs are made present in one system
 * call at its first lookup: the binary search touches every 64 KiB of the
 * table and the FDEs found are spread over .eh_frame (one page-fault trap
 * per 64 KiB touched, 15-40 us on this VM: ~20 a compile in cc1's 361 KB
 * table and 2.4 MB .eh_frame), within a process's first few dozen misses.
 * .eh_frame is taken to end after the FDE of the table's last function
 * (linkers lay FDEs out in address order; if not, less is made present).
 * Objects whose table and FDEs span more than PRESENT_MAX (a browser's:
 * tens of megabytes, of which a search touches little) keep only the
 * table made present, if it is under PRESENT_MAX. Best effort; errno is
 * kept. */
#define PRESENT_MAX ((uintptr_t)4 << 20)

static void
table_present(const uint8_t *hdr, const int32_t *tab, uintptr_t count,
              uintptr_t map_end)
{
	uintptr_t h = (uintptr_t)hdr;
	uintptr_t a = h & ~(uintptr_t)4095;
	uintptr_t e = (uintptr_t)(tab + 2 * count);
	if (e - a > PRESENT_MAX || e > map_end)
		return;
	for (unsigned i = 0; i < NPRESENT; i++) {
		uintptr_t cur = atomic_load_explicit(&hdr_present[i],
		                                     memory_order_relaxed);
		if (cur == h)
			return;
		if (cur == 0 &&
		    atomic_compare_exchange_strong_explicit(
			    &hdr_present[i], &cur, h, memory_order_relaxed,
			    memory_order_relaxed)) {
			/* The last FDE, and a page for its bytes. */
			uintptr_t f = h + (uintptr_t)(intptr_t)tab[2 * count - 1] + 4096;
			if (f > e && f <= map_end && f - a <= PRESENT_MAX)
				e = f;
			int saved = errno;
			(void)madvise((void *)a, e - a, MADV_POPULATE_READ);
			errno = saved;
			return;
		}
		if (cur == h)
			return;
	}
}

/* The FDE covering `q` in an object's .eh_frame_hdr, or NULL; the
 * object's mapping ends at map_end. */
static const uint8_t *
find_fde(const uint8_t *hdr, uintptr_t q, uintptr_t map_end)
{
	if (hdr[0] != 1)
		return NULL;
	const uint8_t *p = hdr + 4, *lim = hdr + 32;
	uintptr_t ehf, count;
	if (read_enc(&p, lim, hdr[1], (uintptr_t)hdr, &ehf) ||
	    read_enc(&p, lim, hdr[2], (uintptr_t)hdr, &count))
		return NULL;
	if (hdr[3] != 0x3b || count == 0 || count > (1u << 28))
		return NULL; /* the table of every linker: datarel sdata4 */
	const int32_t *tab = (const int32_t *)(const void *)p;
	table_present(hdr, tab, count, map_end);
	uintptr_t base = (uintptr_t)hdr;
	if (q < base + (intptr_t)tab[0])
		return NULL;
	size_t lo = 0, hi = count; /* tab[2 * lo] <= q < tab[2 * hi] */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (base + (intptr_t)tab[2 * mid] <= q)
			lo = mid;
		else
			hi = mid;
	}
	return (const uint8_t *)(base + (intptr_t)tab[2 * lo + 1]);
}

/* The bytes of glibc's x86_64 __restore_rt: mov $15, %rax; syscall. */
static const uint8_t sigret_code[9] = {0x48, 0xc7, 0xc0, 0x0f, 0x00,
                                       0x00, 0x00, 0x0f, 0x05};

/* The rule for the frame whose lookup address is q (a return address - 1,
 * or an exact pc when `exact`). */
static uint32_t
resolve(uintptr_t q, int exact)
{
	struct dl_find_object fo;
	if (!find_object || find_object((void *)q, &fo) != 0 ||
	    !fo.dlfo_eh_frame)
		return RULE(R_FP, 0, 0);
	const uint8_t *fde = find_fde(fo.dlfo_eh_frame, q,
	                              (uintptr_t)fo.dlfo_map_end);
	if (!fde)
		return RULE(R_FP, 0, 0);
	const uint8_t *p, *end;
	if (entry_bounds(fde, &p, &end) || end - p < 8)
		return RULE(R_FP, 0, 0);
	int32_t cie_off;
	memcpy(&cie_off, p, 4);
	if (cie_off == 0)
		return RULE(R_FP, 0, 0); /* a CIE, not an FDE */
	cie_info c;
	if (parse_cie(p - cie_off, &c))
		return RULE(R_STOP, 0, 0);
	p += 4;
	uintptr_t start, range;
	/* datarel FDEs do not occur on x86_64 (and it has no dlfo_eh_dbase) */
	if (read_enc(&p, end, c.fde_enc, 0, &start) ||
	    read_enc(&p, end, c.fde_enc & 0x0f, 0, &range))
		return RULE(R_STOP, 0, 0);
	if (q < start || q - start >= range)
		return RULE(R_FP, 0, 0); /* in a gap between FDEs */
	/* The kernel's return address is __restore_rt itself: q, one byte
	 * before it, is in the "S" FDE glibc gives it (a nop comes first). */
	uintptr_t pc = exact ? q : q + 1;
	if (c.signal && pc + sizeof(sigret_code) <= start + range &&
	    !memcmp((const void *)pc, sigret_code, sizeof(sigret_code)))
		return RULE(R_SIGRET, 0, 0);
	if (c.has_z) {
		uint64_t alen;
		if (uleb(&p, end, &alen) || alen > (uint64_t)(end - p))
			return RULE(R_STOP, 0, 0);
		p += alen;
	}
	cfi_row row = {.cfa_reg = 0xfe}, init;
	if (run_cfa(c.insn, c.end, &c, start, UINTPTR_MAX, &row, NULL))
		return RULE(R_STOP, 0, 0);
	init = row;
	if (run_cfa(p, end, &c, start, q, &row, &init))
		return RULE(R_STOP, 0, 0);
	if (c.ra_reg != DW_RA || row.ra_how == H_UNDEF)
		return RULE(R_STOP, 0, 0); /* the outermost frame */
	if (row.ra_how != H_OFF || row.ra_off != -8 ||
	    (row.cfa_reg != DW_RSP && row.cfa_reg != DW_RBP) ||
	    row.cfa_off < 8 || (row.cfa_off & 7) || row.cfa_off / 8 > OFF8_MAX)
		return RULE(R_STOP, 0, 0);
	uint32_t slot = 0;
	if (row.bp_how == H_OFF) {
		if (row.bp_off >= 0 || (row.bp_off & 7) || -row.bp_off / 8 > SLOT_MAX)
			return RULE(R_STOP, 0, 0);
		slot = (uint32_t)(-row.bp_off / 8);
	} else if (row.bp_how == H_BAD)
		return RULE(R_STOP, 0, 0);
	return RULE(row.cfa_reg == DW_RSP ? R_RSP : R_RBP, row.cfa_off / 8, slot);
}

/* Whether the cache's pages were made present: at the first miss, with
 * one system call (range.c), not a page fault (15-40 us here) at the
 * first store into each of its 16 pages, which the hash spreads the
 * first few dozen frames over (~12-15 faults in each sampled compiler or
 * assembler process). A race makes it twice, harmlessly; a kernel
 * without the call (EINVAL) faults them in as before. */
static _Atomic int cache_present;

static HP_NOINLINE uint32_t
lookup_slow(uintptr_t q, int exact, uint32_t i, uint64_t tag)
{
	if (HP_UNLIKELY(!atomic_load_explicit(&cache_present, memory_order_relaxed))) {
		atomic_store_explicit(&cache_present, 1, memory_order_relaxed);
		int saved = errno;
		(void)madvise((void *)cache, sizeof(cache), MADV_POPULATE_WRITE);
		errno = saved;
	}
	uint32_t r = resolve(q, exact);
	if (tag < (1ull << (64 - RULE_BITS)))
		atomic_store_explicit(&cache[i], tag << RULE_BITS | r,
		                      memory_order_relaxed);
	return r;
}

HP_INLINE uint32_t
lookup(uintptr_t q, int exact)
{
	uint32_t i = cache_slot(q);
	uint64_t tag = (uint64_t)q >> CBITS;
	uint64_t w = atomic_load_explicit(&cache[i], memory_order_relaxed);
	if (HP_LIKELY(w >> RULE_BITS == tag)) /* tag >= 1: keys are >= 4096 */
		return (uint32_t)w & ((1u << RULE_BITS) - 1);
	return lookup_slow(q, exact, i, tag);
}

int
heapprof__unwind_uses_fp(uint64_t q)
{
	uint32_t k = RULE_KIND(lookup((uintptr_t)q, 0));
	return k == R_RBP ? 1 : k == R_RSP ? 0 : -1;
}

/* ------------------------------------------------------------ the walk */

/* Pages validated with mincore in this capture (stacks other than the
 * thread's own), and how many checks were made. */
typedef struct vwin {
	uintptr_t lo, hi;
	int checks;
} vwin;

#define PAGE 4096u
#define MAX_CHECKS 16

/* sandbox.c's flag (collect.h), defined here: the unit tests and
 * bench_unwind link the unwinder without sandbox.c. */
_Atomic int heapprof__sandbox;

/* mincore(2) without libc: no errno, no lazily bound call (see above). */
static long
sys_mincore(uintptr_t addr, size_t len, unsigned char *vec)
{
	long ret;
	__asm__ volatile("syscall"
	                 : "=a"(ret)
	                 : "0"((long)SYS_mincore), "D"(addr), "S"(len), "d"(vec)
	                 : "rcx", "r11", "memory");
	return ret;
}

/* Reads the word at `a`, off the thread's stack: from pages mincore
 * reports mapped and resident (a stack page in use was written; a guard
 * page, PROT_NONE and never touched, is not resident). */
static HP_NOINLINE bool
load_slow(vwin *v, uintptr_t a, uintptr_t *out)
{
	if (a - v->lo < v->hi - v->lo && v->hi - a >= 8) {
		memcpy(out, (const void *)a, sizeof(*out));
		return true;
	}
	uintptr_t p0 = a & ~(uintptr_t)(PAGE - 1);
	uintptr_t p1 = (a + 7) & ~(uintptr_t)(PAGE - 1);
	if (a + 8 < a || a < PAGE || v->checks >= MAX_CHECKS)
		return false;
	/* mincore is no call of glibc's malloc: not under a seccomp filter
	 * (sandbox.c), where the walk ends here instead. */
	if (atomic_load_explicit(&heapprof__sandbox, memory_order_relaxed))
		return false;
	v->checks++;
	unsigned char vec[2] = {0, 0};
	size_t len = p1 + PAGE - p0;
	if (sys_mincore(p0, len, vec) != 0 || !(vec[0] & 1) ||
	    (len > PAGE && !(vec[1] & 1)))
		return false;
	if (v->hi == p0)
		v->hi = p0 + len;
	else if (v->lo == p0 + len)
		v->lo = p0;
	else {
		v->lo = p0;
		v->hi = p0 + len;
	}
	memcpy(out, (const void *)a, sizeof(*out));
	return true;
}

/* The walk's state: registers, and the part of the thread's stack known
 * mapped, [tlo, tlo + tspan + 8): from the lowest stack pointer seen on
 * it (tspan = 0 and tlo = ~0: none yet). */
typedef struct walk {
	uintptr_t pc, sp, bp;
	uintptr_t tlo, tspan;
	uintptr_t stack_lo, stack_hi;
	int exact; /* pc is exact (signal-interrupted), not a return address */
} walk;

/* The validated pages live apart from the walk, whose address then never
 * escapes: its fields stay in registers. */
HP_INLINE bool
wload(const walk *w, vwin *v, uintptr_t a, uintptr_t *out)
{
	if (HP_LIKELY(a - w->tlo <= w->tspan)) {
		memcpy(out, (const void *)a, sizeof(*out)); /* may be unaligned */
		return true;
	}
	return load_slow(v, a, out);
}

static void
lower_floor(walk *w)
{
	uintptr_t sp = w->sp;
	if (sp - w->stack_lo < w->stack_hi - w->stack_lo &&
	    w->stack_hi - sp >= 8 && (w->tspan == 0 || sp < w->tlo)) {
		w->tlo = sp;
		w->tspan = w->stack_hi - 8 - sp;
	}
}

/* One frame up. false: the walk ends here. */
HP_INLINE bool
step(walk *w, vwin *v)
{
	uintptr_t q = w->pc - 1 + (uintptr_t)w->exact;
	uint32_t r = lookup(q, w->exact);
	uint32_t kind = RULE_KIND(r);
	uintptr_t cfa, ra, nbp = w->bp;
	if (HP_LIKELY(kind - R_RSP <= R_RBP - R_RSP)) {
		cfa = (kind == R_RSP ? w->sp : w->bp) + (r & 0xfff8u);
		if (HP_UNLIKELY(cfa <= w->sp) || !wload(w, v, cfa - 8, &ra))
			return false;
		uintptr_t slot8 = (r >> 13) & 0x1f8u; /* slot * 8 */
		if (slot8 && !wload(w, v, cfa - slot8, &nbp))
			return false;
	} else if (kind == R_FP) {
		if ((w->bp & 7) || w->bp <= w->sp || !wload(w, v, w->bp, &nbp))
			return false;
		cfa = w->bp + 16;
		if (!wload(w, v, cfa - 8, &ra))
			return false;
	} else if (kind == R_SIGRET) {
		uintptr_t sp = w->sp, nsp;
		if (!wload(w, v, sp + offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP]), &ra) ||
		    !wload(w, v, sp + offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP]), &nsp) ||
		    !wload(w, v, sp + offsetof(ucontext_t, uc_mcontext.gregs[REG_RBP]), &nbp) ||
		    ra < PAGE)
			return false;
		w->pc = ra;
		w->sp = nsp;
		w->bp = nbp;
		w->exact = 1;
		lower_floor(w);
		return true;
	} else
		return false;
	if (HP_UNLIKELY(ra < PAGE))
		return false;
	w->pc = ra;
	w->sp = cfa;
	w->bp = nbp;
	w->exact = 0;
	return true;
}

HP_NOINLINE int
heapprof__unwind_dwarf(uint64_t *out, int max, uintptr_t skip_to,
                       uintptr_t stack_lo, uintptr_t stack_hi)
{
	walk w0;
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
	                 : "=r"(w0.pc), "=r"(w0.sp), "=r"(w0.bp));
	w0.exact = 1;
	w0.tlo = ~(uintptr_t)0;
	w0.tspan = 0;
	w0.stack_lo = stack_lo;
	w0.stack_hi = stack_hi;
	vwin v = {0, 0, 0};
	lower_floor(&w0);
	/* This function's own frame is not recorded. The profiler's frames,
	 * before the one that returns to skip_to, are walked over if it is
	 * among the first 16; if it is not, the walk starts again and keeps
	 * them. */
	walk w = w0;
	if (max <= 0 || !step(&w, &v))
		return 0;
	if (skip_to) {
		int seen = 0;
		while (w.exact || w.pc != skip_to) {
			if (++seen == 16 || !step(&w, &v)) {
				w = w0;
				if (!step(&w, &v))
					return 0;
				break;
			}
		}
	}
	int n = 0;
	for (;;) {
		out[n++] = (uint64_t)(w.pc - 1 + (uintptr_t)w.exact);
		if (n == max || !step(&w, &v))
			return n;
	}
}

/* Whether this thread runs a signal handler: it is on its alternate signal
 * stack, or a word of its stack above here is a return address into glibc's
 * __restore_rt (the kernel's return address of every handler, recognised
 * as step() does). A scan, not a walk: code without CFI or frame pointer
 * (crtstuff's __do_global_dtors_aux, through which the exit dump runs)
 * stops a walk short of the handler. For init.c's exit dump: exit()
 * called by a handler that may have interrupted the allocator. Where it
 * cannot tell (stack bounds unknown: a thread that never sampled, which
 * the kernel may pick for a process-wide signal; another stack; glibc <
 * 2.35), 1: the safe side (the exit profile's allocator figures are
 * left out; taking them waited for ever where the answer was wrong:
 * rel.exitsig.handler failed 1 run in 10 in CI with 0 here). */
HP_NOINLINE int
heapprof__unwind_in_signal(uintptr_t stack_lo, uintptr_t stack_hi)
{
	stack_t ss;
	if (sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK))
		return 1;
	struct dl_find_object fo;
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	if (!find_object || sp < stack_lo || sp >= stack_hi ||
	    find_object((void *)(uintptr_t)sigaltstack, &fo) != 0)
		return 1; /* (sigaltstack: glibc's object, as __restore_rt) */
	uintptr_t lo = (uintptr_t)fo.dlfo_map_start, hi = (uintptr_t)fo.dlfo_map_end;
	for (uintptr_t a = sp & ~(uintptr_t)7; a + 8 <= stack_hi; a += 8) {
		uintptr_t x = *(const uintptr_t *)a;
		if (x - lo < hi - lo && x > lo &&
		    RULE_KIND(lookup(x - 1, 0)) == R_SIGRET)
			return 1;
	}
	return 0;
}
