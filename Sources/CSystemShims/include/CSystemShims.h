#ifndef C_SYSTEM_SHIMS_H
#define C_SYSTEM_SHIMS_H
/* What Swift cannot call directly from the C library: renameat2 has no glibc wrapper before 2.28. */

/// rename(2) that never replaces: renameat2(RENAME_NOREPLACE) on Linux, renamex_np(RENAME_EXCL) on macOS. -1 with
/// errno EEXIST when the name is taken; EINVAL or ENOSYS where the file system or kernel cannot do it.
int ingest_rename_noreplace(const char *from, const char *to);

#endif
