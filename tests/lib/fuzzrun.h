/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bounded libFuzzer runs as ordinary tests (test_fuzz_NAME.c):
 * tests/bin/fuzz/fuzz_NAME (built by tests/tests.mk from tests/fuzz/fuzz_NAME.c
 * with clang -fsanitize=fuzzer,address,undefined) runs for $FUZZ_TIME seconds
 * (default 20) over tests/fuzz/corpus/NAME. New inputs go to the test's
 * temporary directory, never into the repository's corpus.
 *
 *  - pass: no crash, leak, timeout or sanitizer report;
 *  - fail: the fuzzer's report, and the input that broke it copied to
 *    tests/bin/fuzz/ with the command that replays it;
 *  - skip, saying why: the fuzzer could not be built (the compiler's reason,
 *    from tests/bin/fuzz/fuzz_NAME.skip) or cannot run here (VM guests: the
 *    parsers do not depend on the kernel, the host fuzzes them).
 */
#ifndef TCPBUF_TEST_FUZZRUN_H
#define TCPBUF_TEST_FUZZRUN_H

/* Run fuzz_NAME; returns test_done()'s status, or exits 77 via SKIP. */
int fuzz_run(const char *name);

#endif
