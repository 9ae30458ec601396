/* SPDX-License-Identifier: GPL-2.0 */
#ifndef TCPBUF_BPFFS_H
#define TCPBUF_BPFFS_H

#include <stddef.h>

int bpffs_ensure(const char *pin_path);
int bpffs_remove_tree(const char *dir);

/* @pin_path/@sub@name into @buf (@sub ends with '/' or is empty); -ENAMETOOLONG
 * if it does not fit. */
int bpffs_path(char *buf, size_t len, const char *pin_path, const char *sub, const char *name);

#endif
