// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: request_parse() on arbitrary bytes, as a socket peer of
 * tcpbufd could send them. Beyond memory safety (ASan) it checks the
 * promises the daemon relies on: an accepted request is well formed, a
 * rejected one leaves a one-line reason and nothing to free.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/request.h"

#define CHECK(cond) do { if (!(cond)) __builtin_trap(); } while (0)

static void check_accepted(const struct request *req)
{
	CHECK(req->n_cgroups == 0 || req->cgroups);
	for (size_t i = 0; i < req->n_cgroups; i++) {
		CHECK(req->cgroups[i][0] == '/');
		CHECK(!strchr(req->cgroups[i], '\n'));
	}
	if (req->cmd == REQ_SET_LIMIT)
		CHECK(req->n_cgroups == 1 && req->limit_pages >= 1);
	if (req->cmd == REQ_SET)
		CHECK(req->n_cgroups == 1 && req->min_pages >= 1 &&
		      req->min_pages <= req->pressure_pages &&
		      req->pressure_pages <= req->max_pages);
	if (req->cmd == REQ_UNSET)
		CHECK(req->n_cgroups == 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct request req;
	char err[256];
	int ret;

	/* Tiny err buffers must truncate, not overflow. */
	ret = request_parse((const char *)data, size, &req, err, size % 7);
	request_free(&req);

	err[0] = 'x';
	ret = request_parse((const char *)data, size, &req, err, sizeof(err));
	if (ret == 0) {
		check_accepted(&req);
	} else {
		CHECK(ret == -EINVAL || ret == -ENOMEM);
		CHECK(err[0] != '\0' && !strchr(err, '\n'));
		CHECK(req.n_cgroups == 0 && !req.cgroups);
	}
	request_free(&req);
	return 0;
}
