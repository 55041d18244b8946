/*
 * utf8.c: UTF-8 validation and repair for the pprof writers' strings
 * (utf8.h says why). Owns: heapprof__utf8_valid, heapprof__utf8_fix.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* The length of the valid sequence at s[i] (of n), or 0 if none starts
 * there (RFC 3629's table: the second byte's range depends on the first). */
static size_t
seq_len(const unsigned char *s, size_t i, size_t n)
{
	unsigned c = s[i];
	if (c < 0x80)
		return 1;
	size_t len;
	unsigned lo = 0x80, hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		else if (c == 0xed)
			hi = 0x9f; /* surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90; /* overlong */
		else if (c == 0xf4)
			hi = 0x8f; /* past U+10FFFF */
	} else
		return 0;
	if (n - i < len)
		return 0;
	if (s[i + 1] < lo || s[i + 1] > hi)
		return 0;
	for (size_t k = 2; k < len; k++)
		if (s[i + k] < 0x80 || s[i + k] > 0xbf)
			return 0;
	return len;
}

int
heapprof__utf8_valid(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		size_t l = seq_len(u, i, n);
		if (!l)
			return 0;
		i += l;
	}
	return 1;
}

char *
heapprof__utf8_fix(const char *s, size_t n, size_t *outn)
{
	const unsigned char *u = (const unsigned char *)s;
	/* At worst every byte becomes 3 (one U+FFFD each, never adjacent). */
	if (n > (SIZE_MAX - 1) / 3)
		return NULL;
	char *o = malloc(3 * n + 1);
	if (!o)
		return NULL;
	size_t j = 0;
	int bad = 0; /* inside an invalid run */
	for (size_t i = 0; i < n;) {
		size_t l = seq_len(u, i, n);
		if (!l) {
			if (!bad)
				memcpy(o + j, "\xef\xbf\xbd", 3), j += 3;
			bad = 1;
			i++;
			continue;
		}
		bad = 0;
		memcpy(o + j, s + i, l);
		j += l;
		i += l;
	}
	o[j] = 0;
	*outn = j;
	return o;
}
