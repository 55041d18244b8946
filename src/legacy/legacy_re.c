/*
 * legacy_re.c: the regular-expression engine of the legacy parsers (see
 * legacy_re.h): a recursive-descent parser to a small syntax tree, a
 * Thompson compiler to split/jump/save instructions, and a Pike VM that
 * runs threads in priority order, so the first thread to reach MATCH is the
 * leftmost-first match and lower-priority threads are cut there.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "legacy_re.h"

enum { N_CLASS, N_CAT, N_ALT, N_STAR, N_PLUS, N_QUEST, N_GROUP, N_BOL, N_EOL,
       N_EMPTY };

typedef struct node {
	int type;
	int a, b; /* children; N_CLASS: a = class index; N_GROUP: b = group */
} node;

enum { I_CHAR, I_SPLIT, I_JMP, I_SAVE, I_MATCH, I_BOL, I_EOL };

typedef struct inst {
	int op;
	int x, y; /* I_CHAR: x = class; SPLIT: x preferred, y; JMP: x; SAVE: x */
} inst;

typedef struct cls {
	uint8_t bits[32];
} cls;

struct hp_re {
	inst *prog;
	int nprog;
	cls *classes;
	int nclasses;
	int ngroups;
	int anchored; /* starts with ^: only try position 0 */
	/* search scratch, allocated on first use and kept (one search at a
	 * time per compiled pattern) */
	int *pcs;
	long *cs;
	unsigned *mark;
	unsigned gen;
};

typedef struct parser {
	const char *p;
	int err;
	node *nodes;
	int nnodes, cap;
	cls *classes;
	int nclasses, ccap;
	int ngroups;
} parser;

static int
new_node(parser *ps, int type, int a, int b)
{
	if (ps->nnodes == ps->cap) {
		int ncap = ps->cap ? ps->cap * 2 : 64;
		node *n = realloc(ps->nodes, (size_t)ncap * sizeof(*n));
		if (!n) {
			ps->err = -ENOMEM;
			return 0;
		}
		ps->nodes = n;
		ps->cap = ncap;
	}
	ps->nodes[ps->nnodes] = (node){type, a, b};
	return ps->nnodes++;
}

static int
new_class(parser *ps, cls **out)
{
	if (ps->nclasses == ps->ccap) {
		int ncap = ps->ccap ? ps->ccap * 2 : 16;
		cls *c = realloc(ps->classes, (size_t)ncap * sizeof(*c));
		if (!c) {
			ps->err = -ENOMEM;
			return -1;
		}
		ps->classes = c;
		ps->ccap = ncap;
	}
	*out = &ps->classes[ps->nclasses];
	memset(*out, 0, sizeof(**out));
	return ps->nclasses++;
}

static void
set_bit(cls *c, unsigned ch)
{
	c->bits[ch >> 3] |= (uint8_t)(1u << (ch & 7));
}

static void
set_range(cls *c, unsigned lo, unsigned hi)
{
	for (unsigned ch = lo; ch <= hi && ch < 256; ch++)
		set_bit(c, ch);
}

/* Adds a Perl/POSIX class by letter: s d w (as Go: ASCII only). */
static void
add_perl(cls *c, char k)
{
	switch (k) {
	case 's':
		set_bit(c, ' ');
		set_bit(c, '\t');
		set_bit(c, '\n');
		set_bit(c, '\f');
		set_bit(c, '\r');
		break;
	case 'd':
		set_range(c, '0', '9');
		break;
	case 'w':
		set_range(c, '0', '9');
		set_range(c, 'a', 'z');
		set_range(c, 'A', 'Z');
		set_bit(c, '_');
		break;
	case 'x': /* [:xdigit:] */
		set_range(c, '0', '9');
		set_range(c, 'a', 'f');
		set_range(c, 'A', 'F');
		break;
	case 'a': /* [:alpha:] */
		set_range(c, 'a', 'z');
		set_range(c, 'A', 'Z');
		break;
	case 'S': /* [:space:]: \s plus \v */
		add_perl(c, 's');
		set_bit(c, '\v');
		break;
	}
}

static void
negate(cls *c)
{
	for (int i = 0; i < 32; i++)
		c->bits[i] = (uint8_t)~c->bits[i];
}

static int parse_alt(parser *ps);

/* One class item after '\\' inside or outside brackets: a Perl class
 * (returns 1, added to c) or a literal byte in *lit (returns 0). */
static int
escape(parser *ps, cls *c, unsigned *lit)
{
	char k = *ps->p;
	if (!k) {
		ps->err = -EINVAL;
		return 0;
	}
	ps->p++;
	if (k == 's' || k == 'd' || k == 'w') {
		add_perl(c, k);
		return 1;
	}
	if (k == 'S' || k == 'D' || k == 'W') {
		cls t;
		memset(&t, 0, sizeof(t));
		add_perl(&t, (char)(k - 'A' + 'a'));
		negate(&t);
		for (int i = 0; i < 32; i++)
			c->bits[i] |= t.bits[i];
		return 1;
	}
	if (k == 't')
		*lit = '\t';
	else if (k == 'n')
		*lit = '\n';
	else if (k == 'r')
		*lit = '\r';
	else if ((k >= 'a' && k <= 'z') || (k >= 'A' && k <= 'Z') ||
	         (k >= '0' && k <= '9'))
		ps->err = -EINVAL; /* unsupported escape */
	else
		*lit = (unsigned char)k;
	return 0;
}

static int
parse_class(parser *ps)
{
	cls *c;
	int ci = new_class(ps, &c);
	if (ci < 0)
		return 0;
	int neg = 0, first = 1;
	if (*ps->p == '^') {
		neg = 1;
		ps->p++;
	}
	for (;;) {
		char ch = *ps->p;
		if (!ch) {
			ps->err = -EINVAL;
			return 0;
		}
		if (ch == ']' && !first)
			break;
		first = 0;
		if (ch == '[' && ps->p[1] == ':') {
			static const struct {
				const char *name;
				char k;
			} names[] = {{"[:digit:]", 'd'}, {"[:xdigit:]", 'x'},
			             {"[:space:]", 'S'}, {"[:alpha:]", 'a'},
			             {"[:alnum:]", 'n'}};
			size_t i;
			for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
				if (!strncmp(ps->p, names[i].name, strlen(names[i].name)))
					break;
			if (i == sizeof(names) / sizeof(names[0])) {
				ps->err = -EINVAL;
				return 0;
			}
			if (names[i].k == 'n') {
				add_perl(c, 'a');
				add_perl(c, 'd');
			} else {
				add_perl(c, names[i].k);
			}
			ps->p += strlen(names[i].name);
			continue;
		}
		unsigned lo;
		ps->p++;
		if (ch == '\\') {
			if (escape(ps, c, &lo) || ps->err)
				continue;
		} else {
			lo = (unsigned char)ch;
		}
		unsigned hi = lo;
		if (ps->p[0] == '-' && ps->p[1] && ps->p[1] != ']') {
			ps->p++;
			char h = *ps->p++;
			if (h == '\\') {
				if (escape(ps, c, &hi) || ps->err) {
					ps->err = -EINVAL;
					return 0;
				}
			} else {
				hi = (unsigned char)h;
			}
			if (hi < lo) {
				ps->err = -EINVAL;
				return 0;
			}
		}
		set_range(c, lo, hi);
	}
	ps->p++; /* ']' */
	c = &ps->classes[ci];
	if (neg)
		negate(c);
	return new_node(ps, N_CLASS, ci, 0);
}

static int
literal_class(parser *ps, unsigned ch)
{
	cls *c;
	int ci = new_class(ps, &c);
	if (ci < 0)
		return 0;
	set_bit(c, ch);
	return new_node(ps, N_CLASS, ci, 0);
}

static int
parse_atom(parser *ps)
{
	char ch = *ps->p++;
	switch (ch) {
	case '(': {
		int group = -1;
		if (ps->p[0] == '?' && ps->p[1] == ':')
			ps->p += 2;
		else
			group = ++ps->ngroups;
		int inner = parse_alt(ps);
		if (*ps->p != ')') {
			ps->err = -EINVAL;
			return 0;
		}
		ps->p++;
		return group < 0 ? inner : new_node(ps, N_GROUP, inner, group);
	}
	case '[':
		return parse_class(ps);
	case '.': {
		cls *c;
		int ci = new_class(ps, &c);
		if (ci < 0)
			return 0;
		set_range(c, 0, 255);
		c->bits['\n' >> 3] &= (uint8_t)~(1u << ('\n' & 7));
		return new_node(ps, N_CLASS, ci, 0);
	}
	case '^':
		return new_node(ps, N_BOL, 0, 0);
	case '$':
		return new_node(ps, N_EOL, 0, 0);
	case '\\': {
		if (ps->p[0] == 'A' || ps->p[0] == 'z') {
			return new_node(ps, *ps->p++ == 'A' ? N_BOL : N_EOL, 0, 0);
		}
		cls *c;
		int ci = new_class(ps, &c);
		if (ci < 0)
			return 0;
		unsigned lit = 0;
		if (!escape(ps, c, &lit))
			set_bit(&ps->classes[ci], lit);
		return new_node(ps, N_CLASS, ci, 0);
	}
	case '*':
	case '+':
	case '?':
	case ')':
	case '\0':
		ps->err = -EINVAL;
		return 0;
	default:
		return literal_class(ps, (unsigned char)ch);
	}
}

static int
parse_rep(parser *ps)
{
	int n = parse_atom(ps);
	while (!ps->err) {
		char q = *ps->p;
		int type = q == '*' ? N_STAR : q == '+' ? N_PLUS
		                             : q == '?' ? N_QUEST : -1;
		if (type < 0)
			break;
		ps->p++;
		n = new_node(ps, type, n, 0);
	}
	return n;
}

static int
parse_cat(parser *ps)
{
	char ch = *ps->p;
	if (!ch || ch == ')' || ch == '|')
		return new_node(ps, N_EMPTY, 0, 0);
	int n = parse_rep(ps);
	while (!ps->err && (ch = *ps->p) && ch != ')' && ch != '|')
		n = new_node(ps, N_CAT, n, parse_rep(ps));
	return n;
}

static int
parse_alt(parser *ps)
{
	int n = parse_cat(ps);
	while (!ps->err && *ps->p == '|') {
		ps->p++;
		n = new_node(ps, N_ALT, n, parse_cat(ps));
	}
	return n;
}

/* ------------------------------------------------------------- compiler */

typedef struct comp {
	inst *prog;
	int n, cap;
	int err;
	const node *nodes;
} comp;

static int
emit(comp *c, int op, int x, int y)
{
	if (c->n == c->cap) {
		int ncap = c->cap ? c->cap * 2 : 64;
		inst *p = realloc(c->prog, (size_t)ncap * sizeof(*p));
		if (!p) {
			c->err = -ENOMEM;
			return 0;
		}
		c->prog = p;
		c->cap = ncap;
	}
	c->prog[c->n] = (inst){op, x, y};
	return c->n++;
}

static void
gen(comp *c, int ni)
{
	const node *nd = &c->nodes[ni];
	int l1, l2;
	if (c->err)
		return;
	switch (nd->type) {
	case N_CLASS:
		emit(c, I_CHAR, nd->a, 0);
		break;
	case N_CAT:
		gen(c, nd->a);
		gen(c, nd->b);
		break;
	case N_ALT:
		l1 = emit(c, I_SPLIT, 0, 0);
		gen(c, nd->a);
		l2 = emit(c, I_JMP, 0, 0);
		if (c->err)
			return;
		c->prog[l1].x = l1 + 1;
		c->prog[l1].y = c->n;
		gen(c, nd->b);
		if (!c->err)
			c->prog[l2].x = c->n;
		break;
	case N_STAR:
		l1 = emit(c, I_SPLIT, 0, 0);
		gen(c, nd->a);
		emit(c, I_JMP, l1, 0);
		if (!c->err) {
			c->prog[l1].x = l1 + 1;
			c->prog[l1].y = c->n;
		}
		break;
	case N_PLUS:
		l1 = c->n;
		gen(c, nd->a);
		emit(c, I_SPLIT, l1, 0);
		if (!c->err)
			c->prog[c->n - 1].y = c->n;
		break;
	case N_QUEST:
		l1 = emit(c, I_SPLIT, 0, 0);
		gen(c, nd->a);
		if (!c->err) {
			c->prog[l1].x = l1 + 1;
			c->prog[l1].y = c->n;
		}
		break;
	case N_GROUP:
		emit(c, I_SAVE, 2 * nd->b, 0);
		gen(c, nd->a);
		emit(c, I_SAVE, 2 * nd->b + 1, 0);
		break;
	case N_BOL:
		emit(c, I_BOL, 0, 0);
		break;
	case N_EOL:
		emit(c, I_EOL, 0, 0);
		break;
	default:
		break;
	}
}

int
heapprof__re_compile(const char *pattern, hp_re **out)
{
	parser ps;
	memset(&ps, 0, sizeof(ps));
	ps.p = pattern;
	int root = parse_alt(&ps);
	if (!ps.err && *ps.p)
		ps.err = -EINVAL; /* unbalanced ')' */
	comp c;
	memset(&c, 0, sizeof(c));
	c.nodes = ps.nodes;
	if (!ps.err) {
		emit(&c, I_SAVE, 0, 0);
		gen(&c, root);
		emit(&c, I_SAVE, 1, 0);
		emit(&c, I_MATCH, 0, 0);
	}
	int err = ps.err ? ps.err : c.err;
	hp_re *re = err ? NULL : calloc(1, sizeof(*re));
	free(ps.nodes);
	if (!re) {
		free(c.prog);
		free(ps.classes);
		return err ? err : -ENOMEM;
	}
	re->prog = c.prog;
	re->nprog = c.n;
	re->classes = ps.classes;
	re->nclasses = ps.nclasses;
	re->ngroups = ps.ngroups;
	re->anchored = pattern[0] == '^' ||
	               (pattern[0] == '\\' && pattern[1] == 'A');
	*out = re;
	return 0;
}

void
heapprof__re_free(hp_re *re)
{
	if (!re)
		return;
	free(re->prog);
	free(re->classes);
	free(re->pcs);
	free(re->cs);
	free(re->mark);
	free(re);
}

int
heapprof__re_ngroups(const hp_re *re)
{
	return re->ngroups;
}

/* ------------------------------------------------------------- Pike VM */

typedef struct tlist {
	int *pc;
	long *caps; /* ncap per thread */
	int n;
} tlist;

typedef struct vm {
	const hp_re *re;
	const char *s;
	size_t len;
	int ncap;
	unsigned *mark; /* per pc: generation last added */
	unsigned gen;
} vm;

/* Adds the thread at `pc` with captures `caps` (modified in place and
 * restored) to `l`, following jumps, splits (preferred branch first) and
 * saves. Depth is bounded by the program length. */
static void
add(vm *v, tlist *l, int pc, long *caps, size_t pos)
{
	if (v->mark[pc] == v->gen)
		return;
	v->mark[pc] = v->gen;
	const inst *in = &v->re->prog[pc];
	switch (in->op) {
	case I_JMP:
		add(v, l, in->x, caps, pos);
		return;
	case I_SPLIT:
		add(v, l, in->x, caps, pos);
		add(v, l, in->y, caps, pos);
		return;
	case I_SAVE: {
		long old = caps[in->x];
		caps[in->x] = (long)pos;
		add(v, l, pc + 1, caps, pos);
		caps[in->x] = old;
		return;
	}
	case I_BOL:
		if (pos == 0)
			add(v, l, pc + 1, caps, pos);
		return;
	case I_EOL:
		if (pos == v->len)
			add(v, l, pc + 1, caps, pos);
		return;
	default:
		l->pc[l->n] = pc;
		memcpy(l->caps + (size_t)l->n * (size_t)v->ncap, caps,
		       (size_t)v->ncap * sizeof(long));
		l->n++;
		return;
	}
}

int
heapprof__re_search(const hp_re *cre, const char *s, size_t n, long *caps)
{
	hp_re *re = (hp_re *)cre; /* scratch only */
	int ncap = 2 * (re->ngroups + 1);
	size_t np = (size_t)re->nprog;
	if (!re->mark) {
		re->pcs = malloc(2 * np * sizeof(int));
		re->cs = malloc((2 * np + 1) * (size_t)ncap * sizeof(long));
		re->mark = calloc(np, sizeof(unsigned));
		if (!re->pcs || !re->cs || !re->mark) {
			free(re->pcs);
			free(re->cs);
			free(re->mark);
			re->pcs = NULL;
			re->cs = NULL;
			re->mark = NULL;
			return -ENOMEM;
		}
	}
	/* Generations only grow; restart them (and the marks) long before
	 * they could wrap (each position uses two). */
	if (re->gen > UINT32_MAX / 2) {
		memset(re->mark, 0, np * sizeof(unsigned));
		re->gen = 0;
	}
	int *pcs = re->pcs;
	long *cs = re->cs;
	unsigned *mark = re->mark;
	tlist a = {pcs, cs, 0}, b = {pcs + np, cs + np * (size_t)ncap, 0};
	tlist *cl = &a, *nl = &b;
	long *tmp = cs + 2 * np * (size_t)ncap;
	vm v = {re, s, n, ncap, mark, re->gen};
	int matched = 0;
	for (size_t pos = 0;; pos++) {
		v.gen++;
		/* Threads carried over were added to cl at the end of the last
		 * step under the previous generation; re-mark them so a new
		 * start thread does not duplicate one of them. */
		for (int i = 0; i < cl->n; i++)
			mark[cl->pc[i]] = v.gen;
		if (!matched && (pos == 0 || !re->anchored)) {
			for (int i = 0; i < ncap; i++)
				tmp[i] = -1;
			add(&v, cl, 0, tmp, pos);
		}
		if (cl->n == 0) {
			if (matched || re->anchored || pos >= n)
				break;
			continue;
		}
		v.gen++;
		nl->n = 0;
		for (int i = 0; i < cl->n; i++) {
			const inst *in = &re->prog[cl->pc[i]];
			long *tc = cl->caps + (size_t)i * (size_t)ncap;
			if (in->op == I_MATCH) {
				memcpy(caps, tc, (size_t)ncap * sizeof(long));
				matched = 1;
				break; /* cut lower-priority threads */
			}
			/* I_CHAR */
			if (pos < n) {
				unsigned ch = (unsigned char)s[pos];
				if (re->classes[in->x].bits[ch >> 3] & (1u << (ch & 7)))
					add(&v, nl, cl->pc[i] + 1, tc, pos + 1);
			}
		}
		tlist *t = cl;
		cl = nl;
		nl = t;
		if (pos >= n)
			break; /* nothing can consume past the end */
	}
	re->gen = v.gen;
	return matched;
}
