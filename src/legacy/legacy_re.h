/*
 * legacy_re.h: a small regular-expression engine for the legacy profile
 * parsers, so that each grammar can be written as the very pattern the
 * reference tools use and matched with the same semantics: RE2/Go
 * "leftmost-first" submatches (the match a backtracking engine would find,
 * preferring greedy repetition), computed by a Pike VM in O(len * pattern)
 * time and bounded memory, with no recursion on the input.
 *
 * Syntax (a subset of Go's regexp, bytes not runes): literals; escapes \s \S
 * \d \D \w \W \A \z and escaped punctuation; '.' (any byte but '\n'); classes
 * [...] with ranges, negation, escapes and [:digit:] [:xdigit:] [:space:]
 * [:alpha:] [:alnum:]; groups (...) and (?:...); | ; greedy ? * + ; anchors
 * ^ (start of text) and $ (end of text). No lazy quantifiers, counted
 * repetition or flags: the patterns are fixed strings inside heapprof.
 */
#ifndef HEAPPROF_LEGACY_RE_H
#define HEAPPROF_LEGACY_RE_H

#include <stddef.h>

typedef struct hp_re hp_re;

/* Compiles `pattern`. Returns 0, -ENOMEM, or -EINVAL on a syntax error. */
int heapprof__re_compile(const char *pattern, hp_re **out);
void heapprof__re_free(hp_re *re);

/* Number of capture groups (not counting the whole match). */
int heapprof__re_ngroups(const hp_re *re);

/* Searches s[0..n) for the leftmost-first match (Go's FindSubmatchIndex).
 * caps gets 2 * (ngroups + 1) offsets: caps[0], caps[1] the whole match,
 * caps[2g], caps[2g+1] group g; -1 for a group that did not take part.
 * Returns 1 (match), 0 (no match) or -ENOMEM. Keeps scratch memory in
 * `re`: one search at a time per compiled pattern. */
int heapprof__re_search(const hp_re *re, const char *s, size_t n, long *caps);

#endif
