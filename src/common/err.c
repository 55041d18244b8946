/*
 * err.c: heapprof_strerror(), the text of every HEAPPROF_E* code.
 * Negative errno values fall through to strerror_r-style text from libc.
 */
#include <string.h>

#include "heapprof.h"
#include "compiler.h"

HP_EXPORT const char *
heapprof_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case HEAPPROF_EFORMAT:
		return "malformed profile";
	case HEAPPROF_ETRUNC:
		return "truncated input";
	case HEAPPROF_EVARINT:
		return "bad varint (longer than 10 bytes or overflows 64 bits)";
	case HEAPPROF_EWIRETYPE:
		return "bad protobuf wire type";
	case HEAPPROF_ELENGTH:
		return "length-delimited field runs past the end of its message";
	case HEAPPROF_EINDEX:
		return "string index out of range";
	case HEAPPROF_EID:
		return "reserved id 0, duplicate id or id that does not resolve";
	case HEAPPROF_EVALUES:
		return "sample has a number of values other than the number of sample types";
	case HEAPPROF_ETOOBIG:
		return "input exceeds the configured size limit (gzip bomb?)";
	case HEAPPROF_EGZIP:
		return "corrupt gzip stream";
	case HEAPPROF_ESTRING0:
		return "string_table[0] is not the empty string";
	case HEAPPROF_ETYPES:
		return "profiles have different sample or period types";
	case HEAPPROF_ECONCAT:
		return "concatenated profiles detected";
	case HEAPPROF_EEMPTY:
		return "empty input";
	case HEAPPROF_ENOTINIT:
		return "heapprof is not active in this process";
	case HEAPPROF_EOVERFLOW:
		return "integer overflow";
	case HEAPPROF_ENOSUBTRACT:
		return "no sample type of the profile is one to subtract";
	case HEAPPROF_ECHANGED:
		return "the input changed between two reads of it";
	case HEAPPROF_ESAMPLECAP:
		return "a sample has more locations or labels than heapprof's "
		       "limit (65,536 each)";
	case HEAPPROF_ESANDBOX:
		return "the process is in a seccomp sandbox: heapprof writes no profile";
	case HEAPPROF_ENOTLEGACY:
		return "not a legacy heap profile (unrecognized first line)";
	case HEAPPROF_ESAMPLE:
		return "malformed sample line in a legacy heap profile";
	case HEAPPROF_EZEROCOUNT:
		return "legacy heap sample with a count of 0 but nonzero bytes";
	case HEAPPROF_EADDR:
		return "stack address does not fit in 64 bits";
	case HEAPPROF_EJEMALLOC:
		return "malformed jemalloc heap profile line";
	case HEAPPROF_ENOTHEAP:
		return "not a heap profile (no objects/space sample types)";
	case HEAPPROF_ETEXTVALUE:
		return "value cannot be written as legacy text (negative allocation, "
		       "count 0 with bytes, or a location without an address)";
	default:
		break;
	}
	if (err < 0 && err > -4096) {
		/* glibc's strerror returns a pointer to a static table entry
		 * for known codes; unknown ones use a thread-local buffer. */
		return strerror(-err);
	}
	return "unknown error";
}
