/*
 * utf8.h: text made valid UTF-8 for a pprof string table (utf8.c).
 * profile.proto is proto3, whose `string` fields must hold valid UTF-8:
 * protobuf's own decoders reject a whole profile with one bad string
 * (go tool pprof's decoder does not check). Label values come from the
 * program (request paths, tenant names) and from other processes'
 * memory (the OpenTelemetry thread context), so they may be any bytes.
 */
#ifndef HEAPPROF_UTF8_H
#define HEAPPROF_UTF8_H

#include <stddef.h>

/* Whether the n bytes at s are valid UTF-8 (no overlong forms, no
 * surrogates, nothing past U+10FFFF). */
int heapprof__utf8_valid(const char *s, size_t n);

/* The n bytes at s with each maximal invalid sequence replaced by U+FFFD
 * (as Go's strings.ToValidUTF8(s, "\uFFFD")): a new string of *outn bytes
 * (malloc'd, NUL-terminated), or NULL (no memory). */
char *heapprof__utf8_fix(const char *s, size_t n, size_t *outn);

#endif
