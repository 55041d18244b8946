/*
 * dwarf_sym.c: the DWARF symbolizer (see dwarf_sym.h). One libdwfl session
 * per file, reported offline at bias 0 so queries are ELF virtual addresses
 * (runtime address -> file offset -> vaddr through our own PT_LOAD reader,
 * elffile.c). Frames come from the nest of function scopes containing the
 * address (dwarf_scopes.c; the frames eu-addr2line -i prints): the line
 * table gives the innermost frame's file:line, each inlined subroutine's
 * DW_AT_call_file/call_line the next frame out. Names are DW_AT_linkage_name (demangled for display) or
 * DW_AT_name; without DWARF, the symbol table's name.
 */
#include <dwarf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "demangle.h"
#include "dwarf_dl.h"
#include "dwarf_scopes.h"
#include "dwarf_sym.h"
#include "pathtab.h"
#include "elffile.h"

typedef struct dw_entry {
	char *path;
	int status;       /* HEAPPROF_DWSYM_* */
	int has_dwarf;    /* -1: not looked at yet */
	int warned;       /* a build id warning was given */
	heapprof_elf elf; /* PT_LOADs and build id (status OK or BUILDID) */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	GElf_Addr bias; /* dwfl address = vaddr + bias */
	/* CU address ranges, for files without .debug_aranges (clang's
	 * default), which libdw 0.188's dwfl_module_addrdie cannot search. */
	struct cu_range *cus;
	size_t ncus;
	int cus_built;
	dw_scope_index scopes; /* function scopes per CU */
} dw_entry;

struct cu_range {
	Dwarf_Addr lo, hi; /* DWARF addresses, [lo, hi) */
	Dwarf_Off die;     /* offset of the CU DIE */
};

typedef struct name_slot {
	const char *mangled; /* pointer from libdw (stable for the session) */
	char *shown;         /* malloc'd demangled name, or NULL: same */
} name_slot;

struct heapprof_dwsym {
	const heapprof_libdw *dw;
	pathtab files; /* dw_entry by path */
	char *debuginfo_path; /* libdwfl search path ("-:.debug:/root:...") */
	Dwfl_Callbacks cb;
	int demangle; /* HEAPPROF_DEMANGLE_* */
	name_slot *names; /* open addressing on the pointer */
	size_t nnames, names_cap;
	heapprof_dwsym_warn_fn *warn;
	void *warn_arg;
};

const char *
heapprof__dwsym_unavailable(void)
{
	const char *why = NULL;
	return heapprof__libdw(&why) ? NULL : why;
}

static char *
dup_str(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

/* libdwfl's search path: "" (the file's directory), ".debug" (a
 * subdirectory of it), then each debug root. A root serves both the
 * .build-id lookup and the debuglink lookup ROOT/<file's dir>/<link>. */
static char *
make_debuginfo_path(const heapprof_dwsym_options *o)
{
	static const char *const def[] = {"/usr/lib/debug"};
	const char *const *dirs = o && o->debug_dirs ? o->debug_dirs : def;
	size_t n = o && o->debug_dirs ? o->ndebug_dirs : 1;
	size_t len = 16;
	for (size_t i = 0; i < n; i++)
		len += strlen(dirs[i]) + 1;
	char *p = malloc(len), *w = p;
	if (!p)
		return NULL;
	w += sprintf(w, ":.debug");
	for (size_t i = 0; i < n; i++)
		if (dirs[i][0] == '/' && !strchr(dirs[i], ':'))
			w += sprintf(w, ":%s", dirs[i]);
	return p;
}

heapprof_dwsym *
heapprof__dwsym_new(const heapprof_dwsym_options *opt)
{
	heapprof_dwsym *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->debuginfo_path = make_debuginfo_path(opt);
	if (!s->debuginfo_path) {
		free(s);
		return NULL;
	}
	s->dw = heapprof__libdw(NULL);
	if (s->dw) {
		s->cb.find_elf = s->dw->dwfl_build_id_find_elf;
		s->cb.find_debuginfo = s->dw->dwfl_standard_find_debuginfo;
		s->cb.section_address = s->dw->dwfl_offline_section_address;
		s->cb.debuginfo_path = &s->debuginfo_path;
	}
	s->demangle = opt ? opt->demangle : HEAPPROF_DEMANGLE_SIMPLE;
	if (opt) {
		s->warn = opt->warn;
		s->warn_arg = opt->warn_arg;
	}
	return s;
}

void
heapprof__dwsym_free(heapprof_dwsym *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->files.n; i++) {
		dw_entry *e = s->files.v[i];
		if (e->dwfl)
			s->dw->dwfl_end(e->dwfl);
		heapprof__elf_close(&e->elf);
		free(e->cus);
		heapprof__dwscope_free(&e->scopes);
		free(e->path);
		free(e);
	}
	for (size_t i = 0; i < s->names_cap; i++)
		free(s->names[i].shown);
	free(s->names);
	heapprof__pathtab_free(&s->files);
	free(s->debuginfo_path);
	free(s);
}

/* ------------------------------------------------------------ files */

static void
open_entry(heapprof_dwsym *s, dw_entry *e)
{
	int rc = heapprof__elf_open(&e->elf, e->path, 0);
	if (rc == -ENOEXEC) {
		e->status = HEAPPROF_DWSYM_NOTELF;
		return;
	}
	if (rc < 0) {
		e->status = HEAPPROF_DWSYM_NOFILE;
		return;
	}
	if (!s->dw) {
		e->status = HEAPPROF_DWSYM_NOLIBDW;
		return;
	}
	e->dwfl = s->dw->dwfl_begin(&s->cb);
	if (!e->dwfl) {
		e->status = HEAPPROF_DWSYM_NOTELF;
		return;
	}
	s->dw->dwfl_report_begin(e->dwfl);
	/* base 0 with add_p_vaddr: module addresses are the ELF vaddrs. */
	e->mod = s->dw->dwfl_report_elf(e->dwfl, e->path, e->path, -1, 0, true);
	s->dw->dwfl_report_end(e->dwfl, NULL, NULL);
	if (!e->mod || !s->dw->dwfl_module_getelf(e->mod, &e->bias)) {
		e->status = HEAPPROF_DWSYM_NOTELF;
		return;
	}
	e->status = HEAPPROF_DWSYM_OK;
}

static dw_entry *
get_entry(heapprof_dwsym *s, const char *path)
{
	dw_entry *e = heapprof__pathtab_find(&s->files, path);
	if (e)
		return e;
	e = calloc(1, sizeof(*e));
	if (!e || !(e->path = dup_str(path)) ||
	    heapprof__pathtab_add(&s->files, e->path, e) != 0) {
		if (e)
			free(e->path);
		free(e);
		return NULL;
	}
	e->has_dwarf = -1;
	open_entry(s, e);
	return e;
}

/* The entry for `path` if it may serve a mapping with `build_id`, else NULL
 * (*status says why). Warns once per file about a build id mismatch. */
static dw_entry *
checked_entry(heapprof_dwsym *s, const char *path, const char *build_id,
              int *status)
{
	dw_entry *e = get_entry(s, path);
	if (!e) {
		*status = HEAPPROF_DWSYM_NOFILE;
		return NULL;
	}
	*status = e->status;
	if (e->status != HEAPPROF_DWSYM_OK)
		return NULL;
	if (build_id && build_id[0] &&
	    strcasecmp(build_id, e->elf.build_id) != 0) {
		*status = HEAPPROF_DWSYM_BUILDID;
		if (!e->warned && s->warn) {
			char msg[2 * HEAPPROF_BUILD_ID_MAX + 200];
			snprintf(msg, sizeof(msg),
			         "build id %s does not match the mapping's %.*s",
			         e->elf.build_id[0] ? e->elf.build_id : "(none)",
			         2 * HEAPPROF_BUILD_ID_MAX, build_id);
			s->warn(s->warn_arg, path, msg);
		}
		e->warned = 1;
		return NULL;
	}
	return e;
}

int
heapprof__dwsym_file_status(heapprof_dwsym *s, const char *path,
                            const char *build_id, int *has_dwarf)
{
	int st;
	dw_entry *e = checked_entry(s, path, build_id, &st);
	if (has_dwarf)
		*has_dwarf = 0;
	if (!e)
		return st;
	if (e->has_dwarf < 0) {
		Dwarf_Addr b;
		e->has_dwarf = s->dw->dwfl_module_getdwarf(e->mod, &b) != NULL;
	}
	if (has_dwarf)
		*has_dwarf = e->has_dwarf;
	return st;
}

/* ------------------------------------------------------------ names */

static uint64_t
ptr_hash(const void *p)
{
	uint64_t x = (uint64_t)(uintptr_t)p;
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ULL;
	return x ^ (x >> 29);
}

static int
names_grow(heapprof_dwsym *s)
{
	size_t nc = s->names_cap ? s->names_cap * 2 : 256;
	name_slot *nv = calloc(nc, sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	for (size_t i = 0; i < s->names_cap; i++) {
		if (!s->names[i].mangled)
			continue;
		size_t j = ptr_hash(s->names[i].mangled) & (nc - 1);
		while (nv[j].mangled)
			j = (j + 1) & (nc - 1);
		nv[j] = s->names[i];
	}
	free(s->names);
	s->names = nv;
	s->names_cap = nc;
	return 0;
}

/* The display form of a linkage name: demangled once, remembered. */
static const char *
shown_name(heapprof_dwsym *s, const char *mangled)
{
	if (s->demangle == HEAPPROF_DEMANGLE_NONE || mangled[0] != '_' ||
	    mangled[1] != 'Z')
		return mangled;
	if ((s->nnames + 1) * 2 > s->names_cap && names_grow(s) < 0)
		return mangled;
	size_t j = ptr_hash(mangled) & (s->names_cap - 1);
	while (s->names[j].mangled && s->names[j].mangled != mangled)
		j = (j + 1) & (s->names_cap - 1);
	if (!s->names[j].mangled) {
		char *d = heapprof__demangle(
			mangled, s->demangle == HEAPPROF_DEMANGLE_FULL);
		s->names[j].mangled = mangled;
		s->names[j].shown = d;
		s->nnames++;
	}
	return s->names[j].shown ? s->names[j].shown : mangled;
}

/* Fills f->function / system_name / start_line from a subprogram or
 * inlined-subroutine DIE (following abstract_origin and specification). */
static void
die_function(heapprof_dwsym *s, Dwarf_Die *die, heapprof_frame *f)
{
	const heapprof_libdw *dw = s->dw;
	Dwarf_Attribute a;
	const char *link = NULL;
	if (dw->dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dw->dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		link = dw->dwarf_formstring(&a);
	const char *name = dw->dwarf_diename(die);
	if (link) {
		f->system_name = link;
		f->function = shown_name(s, link);
	} else {
		f->system_name = name;
		f->function = name;
	}
	int line = 0;
	if (dw->dwarf_decl_line(die, &line) == 0 && line > 0)
		f->start_line = line;
}

static int
cu_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Every CU's ranges (from its DIE: low_pc/high_pc or DW_AT_ranges). */
static void
build_cu_table(heapprof_dwsym *s, dw_entry *e, Dwarf *dbg)
{
	const heapprof_libdw *dw = s->dw;
	size_t cap = 0;
	Dwarf_Off off = 0, next;
	size_t hsize;
	e->cus_built = 1;
	while (dw->dwarf_nextcu(dbg, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		if (dw->dwarf_offdie(dbg, off + hsize, &cu)) {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t it = 0;
			while ((it = dw->dwarf_ranges(&cu, it, &base, &lo, &hi)) > 0) {
				if (lo >= hi)
					continue;
				if (e->ncus == cap) {
					size_t nc = cap ? cap * 2 : 64;
					struct cu_range *nv =
						realloc(e->cus, nc * sizeof(*nv));
					if (!nv)
						goto done;
					e->cus = nv;
					cap = nc;
				}
				e->cus[e->ncus++] = (struct cu_range){
					lo, hi, off + hsize};
			}
		}
		off = next;
	}
done:
	qsort(e->cus, e->ncus, sizeof(*e->cus), cu_cmp);
}

/* The CU DIE containing dwfl address `addr`, and the DWARF bias. */
static Dwarf_Die *
find_cu(heapprof_dwsym *s, dw_entry *e, Dwarf_Addr addr, Dwarf_Die *mem,
        Dwarf_Addr *dwbias)
{
	const heapprof_libdw *dw = s->dw;
	Dwarf_Die *cu = dw->dwfl_module_addrdie(e->mod, addr, dwbias);
	if (cu)
		return cu;
	Dwarf *dbg = dw->dwfl_module_getdwarf(e->mod, dwbias);
	if (!dbg)
		return NULL;
	if (!e->cus_built)
		build_cu_table(s, e, dbg);
	Dwarf_Addr a = addr - *dwbias;
	/* Ranges may overlap (rarely): scan back from the last lo <= a. */
	size_t lo = 0, hi = e->ncus;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (e->cus[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0 && lo - i <= 8;)
		if (a < e->cus[i].hi)
			return dw->dwarf_offdie(dbg, e->cus[i].die, mem);
	return NULL;
}

/* Frames from the DIE chain containing dwfl address `addr`. */
static size_t
dwarf_frames(heapprof_dwsym *s, dw_entry *e, Dwarf_Addr addr,
             heapprof_frame *out, size_t cap)
{
	const heapprof_libdw *dw = s->dw;
	Dwarf_Addr dwbias = 0;
	Dwarf_Die cumem;
	Dwarf_Die *cu = find_cu(s, e, addr, &cumem, &dwbias);
	if (!cu)
		return 0;
	/* The innermost frame's file:line from the line table. */
	const char *file = NULL;
	int line = 0;
	Dwarf_Line *l = dw->dwarf_getsrc_die(cu, addr - dwbias);
	if (l) {
		file = dw->dwarf_linesrc(l, NULL, NULL);
		if (dw->dwarf_lineno(l, &line) != 0)
			line = 0;
	}

	/* The innermost function scope, then outwards through inlined calls
	 * to the subprogram the code belongs to. */
	size_t k = 0;
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	const dw_cu_scopes *cs = heapprof__dwscope_cu(dw, &e->scopes, cu);
	Dwarf *dbg = cs ? dw->dwfl_module_getdwarf(e->mod, &dwbias) : NULL;
	long i = cs && dbg ? heapprof__dwscope_find(cs, addr - dwbias) : -1;
	for (; i >= 0 && k < cap; i = cs->v[i].parent) {
		Dwarf_Die die;
		if (!dw->dwarf_offdie(dbg, cs->v[i].die, &die))
			break;
		heapprof_frame *f = &out[k++];
		memset(f, 0, sizeof(*f));
		die_function(s, &die, f);
		f->file = file;
		f->line = line;
		if (!cs->v[i].inlined)
			break;
		/* An inlined call: the caller's frame is at its call site. */
		Dwarf_Attribute a;
		Dwarf_Word v;
		file = NULL;
		line = 0;
		if (!files && dw->dwarf_getsrcfiles(cu, &files, &nfiles) != 0)
			files = NULL;
		if (files && dw->dwarf_formudata(dw->dwarf_attr(&die,
		                                 DW_AT_call_file, &a), &v) == 0 &&
		    v < nfiles)
			file = dw->dwarf_filesrc(files, v, NULL, NULL);
		if (dw->dwarf_formudata(dw->dwarf_attr(&die, DW_AT_call_line, &a),
		                        &v) == 0)
			line = (int)v;
	}
	if (k == 0 && file && cap > 0) {
		/* Line info but no function DIE: a name from the symbols. */
		memset(&out[0], 0, sizeof(out[0]));
		out[0].file = file;
		out[0].line = line;
		k = 1;
	}
	return k;
}

size_t
heapprof__dwsym_frames(heapprof_dwsym *s, const heapprof_mapping *m,
                       const char *path, uint64_t addr, heapprof_frame *out,
                       size_t cap)
{
	if (!s || !m || cap == 0)
		return 0;
	if (!path)
		path = m->file;
	if (!path || path[0] != '/')
		return 0;
	if (addr < m->start || (m->limit > m->start && addr >= m->limit))
		return 0;
	int st;
	dw_entry *e = checked_entry(s, path, m->build_id, &st);
	if (!e)
		return 0;
	uint64_t vaddr;
	if (heapprof__elf_runtime_to_vaddr(&e->elf, m->start, m->offset, addr,
	                                   &vaddr) != 0)
		return 0;
	Dwarf_Addr a = vaddr + e->bias;
	size_t k = dwarf_frames(s, e, a, out, cap);
	if (k == 1 && out[0].function)
		return k;
	if (k > 1)
		return k;
	/* No DWARF function here: the symbol table's name. */
	GElf_Off off;
	GElf_Sym sym;
	const char *name = s->dw->dwfl_module_addrinfo(e->mod, a, &off, &sym,
	                                               NULL, NULL, NULL);
	if (!name || !*name)
		return k;
	if (k == 0)
		memset(&out[0], 0, sizeof(out[0]));
	out[0].system_name = name;
	out[0].function = shown_name(s, name);
	return 1;
}

size_t
heapprof__dwsym_symbolize_frames(void *arg, uint64_t addr,
                                 const heapprof_mapping *m, heapprof_frame *out,
                                 size_t cap)
{
	return heapprof__dwsym_frames(arg, m, NULL, addr, out, cap);
}

const char *
heapprof__dwsym_symbolize(void *arg, uint64_t addr, const heapprof_mapping *m)
{
	heapprof_frame f[32];
	size_t n = heapprof__dwsym_frames(arg, m, NULL, addr, f, 32);
	return n ? f[n - 1].function : NULL;
}
