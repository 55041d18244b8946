/*
 * version.h: the version and git commit heapprof was built from, for
 * `heapprof --version` and the comments of the profiles the library
 * writes. Depends on nothing.
 */
#ifndef HEAPPROF_VERSION_H
#define HEAPPROF_VERSION_H

/* "heapprof 0.1 (commit 0123456789ab)": static, never NULL. The commit
 * is "unknown" in a build from neither a git clone nor a `git archive`
 * tarball. */
const char *heapprof__version_string(void);

#endif
