/*
 * demangle.c: C++ names for display, as pprof shows them by default: the
 * demangler's output (__cxa_demangle, see dwarf_dl.h) without parameter
 * lists, template arguments, return types, cv-qualifiers and clone
 * suffixes ("std::vector::_M_realloc_insert"), or the full demangled name.
 * Pure string work otherwise; the caller owns the result (malloc'd).
 */
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "dwarf_dl.h"

#define SPACE_KEPT '\x01' /* a space that does not split tokens */

static int
op_char(char c)
{
	return c && strchr("<>=!+-*/%^&|~,[]", c) != NULL;
}

/* Drops every (...) and <...> group outside {...} (lambda and unnamed
 * type names), keeping "(anonymous namespace)" and operator tokens. */
static void
strip_groups(const char *in, char *out)
{
	int depth = 0;
	char *w = out;
	for (const char *p = in; *p;) {
		if (depth == 0 && *p == '(' &&
		    !strncmp(p, "(anonymous namespace)", 21)) {
			memcpy(w, "(anonymous\x01namespace)", 21);
			w += 21;
			p += 21;
		} else if (depth == 0 && *p == '{') {
			int braces = 0;
			do {
				braces += *p == '{';
				braces -= *p == '}';
				*w++ = *p == ' ' ? SPACE_KEPT : *p;
				p++;
			} while (*p && braces > 0);
		} else if (depth == 0 && *p == 'o' && !strncmp(p, "operator", 8) &&
		           (p == in || p[-1] == ':' || p[-1] == ' ') &&
		           !(p[8] >= 'a' && p[8] <= 'z') && p[8] != '_') {
			memcpy(w, "operator", 8);
			w += 8;
			p += 8;
			if (p[0] == '(' && p[1] == ')') {
				memcpy(w, "()", 2);
				w += 2;
				p += 2;
			}
			while (op_char(*p))
				*w++ = *p++;
		} else if (*p == '(' || *p == '<') {
			depth++;
			p++;
		} else if (*p == ')' || *p == '>') {
			if (depth > 0)
				depth--;
			p++;
		} else {
			if (depth == 0)
				*w++ = *p;
			p++;
		}
	}
	*w = 0;
}

/* The function name out of "RET NAME QUALIFIERS": the last token, with
 * "operator" joined to the token after it. In place. */
static void
pick_name(char *s)
{
	char *tok[64], *save = NULL;
	size_t n = 0;
	for (char *t = strtok_r(s, " ", &save); t && n < 64;
	     t = strtok_r(NULL, " ", &save))
		tok[n++] = t;
	/* Trailing qualifiers and [clone .xyz] suffixes. */
	while (n > 1) {
		const char *t = tok[n - 1];
		if (!strcmp(t, "const") || !strcmp(t, "volatile") ||
		    !strcmp(t, "&") || !strcmp(t, "&&") || t[0] == '[')
			n--;
		else if (n > 1 && !strcmp(tok[n - 2], "[clone"))
			n -= 2;
		else
			break;
	}
	size_t first = n ? n - 1 : 0;
	if (first > 0) {
		size_t l = strlen(tok[first - 1]);
		if (l >= 8 && !strcmp(tok[first - 1] + l - 8, "operator"))
			first--;
	}
	char *w = s;
	for (size_t i = first; i < n; i++) {
		size_t l = strlen(tok[i]);
		if (w != s)
			*w++ = ' ';
		memmove(w, tok[i], l);
		w += l;
	}
	*w = 0;
	for (char *p = s; *p; p++)
		if (*p == SPACE_KEPT)
			*p = ' ';
}

char *
heapprof__demangle(const char *mangled, int full)
{
	return heapprof__demangle_with(heapprof__demangler(), mangled, full);
}

char *
heapprof__demangle_with(heapprof_demangle_fn *dm, const char *mangled,
                        int full)
{
	if (!dm || !mangled || mangled[0] != '_' || mangled[1] != 'Z')
		return NULL;
	int st = -1;
	char *d = dm(mangled, NULL, NULL, &st);
	if (st != 0 || !d) {
		free(d);
		return NULL;
	}
	if (full)
		return d;
	char *s = malloc(strlen(d) + 1);
	if (s) {
		strip_groups(d, s);
		pick_name(s);
		if (!*s) {
			free(s);
			s = NULL;
		}
	}
	if (!s)
		return d;
	free(d);
	return s;
}

size_t
heapprof__sym_unversioned_len(const char *name)
{
	/* "name@@VERSION" (default) or "name@VERSION": '@' is in no C or
	 * mangled C++ name, so the first one (not at the start) begins it. */
	const char *at = name[0] ? strchr(name + 1, '@') : NULL;
	return at ? (size_t)(at - name) : strlen(name);
}

int
heapprof__is_alloc_entry(const char *name, size_t n)
{
	/* Global operator new and new[] in every form (sized by unsigned
	 * long "m", unsigned int "j" or unsigned long long "y"; nothrow
	 * "RKSt9nothrow_t"; C++17 aligned "St11align_val_t"), from libstdc++
	 * and libc++ alike (Itanium C++ ABI: <operator-name> nw / na at the
	 * top level, so no user function's name starts this way). Placement
	 * new (_ZnwmPv) is inline and never a frame. */
	return n >= 5 && name[0] == '_' && name[1] == 'Z' && name[2] == 'n' &&
	       (name[3] == 'w' || name[3] == 'a') &&
	       (name[4] == 'm' || name[4] == 'j' || name[4] == 'y');
}
