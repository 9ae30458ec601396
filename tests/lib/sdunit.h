/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the tests that hold tcpbufd to its systemd unit
 * (systemd/tcpbufd.service): read the unit's settings, run the daemon
 * through a wrapper script (setpriv, strace, environment), run tools.
 */
#ifndef TCPBUF_TEST_SDUNIT_H
#define TCPBUF_TEST_SDUNIT_H

#include <stdbool.h>

#define UNIT_FILE "systemd/tcpbufd.service"

/*
 * The values of every KEY= line of the unit, in order, as written (an empty
 * assignment appears as ""). NULL-terminated, malloc'd; NULL if the unit
 * cannot be read.
 */
char **unit_values(const char *key);
/* The words of all KEY= lines, honouring systemd's reset by an empty
 * assignment (CapabilityBoundingSet=, ReadWritePaths=, ...). */
char **unit_words(const char *key);
/* 1 if words holds w. */
bool words_have(char **words, const char *w);
void words_free(char **words);

/* $TCPBUFD as an absolute path (malloc'd). */
char *tcpbufd_abs_path(void);

/*
 * Write an executable /bin/sh script test_tmpdir()/NAME whose body is the
 * printf format; returns its path (malloc'd). Use with
 * setenv("TCPBUFD", path, 1) so daemon_start() runs the daemon through it;
 * the script must end in `exec`, so the daemon keeps the script's pid.
 */
char *write_script(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Run `sh -c CMD` (printf format); *out gets stdout and stderr (malloc'd,
 * NUL-terminated; NULL to discard). Returns the exit status, or 128+N. */
int run_sh(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* 1 if PROG is an executable in $PATH (or an executable path). */
bool have_program(const char *prog);

/* Lines of the file at path that hold needle; -1 if it cannot be read. */
int file_lines_with(const char *path, const char *needle);

/* Shell-quote s in single quotes (malloc'd). */
char *sh_quote(const char *s);

#endif
