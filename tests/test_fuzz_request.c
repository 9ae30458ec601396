// SPDX-License-Identifier: GPL-2.0
/* Bounded libFuzzer run of tests/fuzz/fuzz_request.c over its corpus: see lib/fuzzrun.h. */
#include "fuzzrun.h"

int main(void)
{
	return fuzz_run("request");
}
