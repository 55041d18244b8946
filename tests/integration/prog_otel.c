/*
 * prog_otel.c: a program that publishes the OpenTelemetry thread context
 * (OTEP 4947) as a tracer would: the exported thread-local pointer
 * otel_thread_ctx_v1 (built with -rdynamic, so it is in .dynsym) to a
 * packed record (trace_id[16], span_id[8], valid, trace_flags,
 * attrs_data_size u16, then {key u8, len u8, value} entries).
 *
 *   prog_otel MODE   valid: attributes 0="/a" 1="tenant-7", 100 blocks
 *                    of 300 bytes at site_otel; torn: the same record
 *                    with valid 0; bogus: an entry longer than the size;
 *                    big: attrs_data_size past the 640-byte limit;
 *                    null: no record
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((visibility("default"))) __thread void *otel_thread_ctx_v1;

static __attribute__((noinline)) void *
site_otel(size_t n)
{
	return malloc(n);
}

static uint8_t rec[640];

static void
publish(int valid, uint16_t claimed_extra, int bogus)
{
	memset(rec, 0, sizeof(rec));
	for (int i = 0; i < 16; i++)
		rec[i] = (uint8_t)(0xa0 + i);
	for (int i = 0; i < 8; i++)
		rec[16 + i] = (uint8_t)(0xb0 + i);
	rec[25] = 1; /* sampled */
	size_t p = 28;
	rec[p++] = 0;
	rec[p++] = 2;
	memcpy(rec + p, "/a", 2);
	p += 2;
	rec[p++] = 1;
	rec[p++] = bogus ? 200 : 8; /* bogus: runs past the size */
	memcpy(rec + p, "tenant-7", 8);
	p += 8;
	uint16_t size = (uint16_t)(p - 28 + claimed_extra);
	memcpy(rec + 26, &size, 2);
	rec[24] = (uint8_t)valid;
	otel_thread_ctx_v1 = rec;
}

int
main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "valid";
	if (!strcmp(m, "valid"))
		publish(1, 0, 0);
	else if (!strcmp(m, "torn"))
		publish(0, 0, 0);
	else if (!strcmp(m, "bogus"))
		publish(1, 0, 1);
	else if (!strcmp(m, "big"))
		publish(1, 1000, 0);
	else if (strcmp(m, "null"))
		return 2;
	for (int i = 0; i < 100; i++)
		free(site_otel(300));
	otel_thread_ctx_v1 = NULL;
	printf("done %s\n", m);
	return 0;
}
