/* SPDX-License-Identifier: GPL-2.0 */
#ifndef TCPBUF_BPFFS_H
#define TCPBUF_BPFFS_H

int bpffs_ensure(const char *pin_path);
int bpffs_remove_tree(const char *dir);

#endif
