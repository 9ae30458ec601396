// SPDX-License-Identifier: GPL-2.0
/*
 * vprofile: where the verifier spends its walk of one program. Loads PROG of
 * OBJ alone (maps of its own, .rodata NAME=VALUE as its loader sets it) with
 * the instruction log (log_level 2), then counts the instructions processed
 * under each source line (the log's "; line" annotations) and the states
 * pruned there ("N: safe"), and prints the TOP lines by instructions:
 *
 *   vprofile OBJ PROG [NAME=VALUE...] [-n TOP]
 *   "INSNS PRUNED FIRST_INSN  source line", then a total line
 *
 * Comparing two kernels' profiles of the same object says which construct
 * the newer verifier walks further. The log of a 1M-instruction walk is
 * ~200 MB: run it where there is the memory for it.
 */
#include "common.h"
#include "rodata.h"
#include <bpf/bpf.h>

#define LOG_SIZE	(512u << 20)
#define MAX_LINES	65536

struct line_count {
	const char *text;	/* the source line, in the log */
	size_t len;
	unsigned long insns, pruned;
	long first;		/* the first instruction seen under it */
};

static struct line_count lines[MAX_LINES];
static int nlines;

/* Source lines by text (inlined copies of one line add up). */
static struct line_count *line_of(const char *text, size_t len)
{
	for (int i = nlines - 1; i >= 0; i--)
		if (lines[i].len == len && !memcmp(lines[i].text, text, len))
			return &lines[i];
	if (nlines == MAX_LINES)
		return NULL;
	lines[nlines] = (struct line_count){ .text = text, .len = len, .first = -1 };
	return &lines[nlines++];
}

static int by_insns(const void *a, const void *b)
{
	const struct line_count *x = a, *y = b;

	return x->insns < y->insns ? 1 : x->insns > y->insns ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct line_count none = { .text = "(before any line)", .len = 17, .first = -1 }, *cur = &none;
	unsigned long insns = 0, pruned = 0;
	struct bpf_program *prog;
	struct bpf_object *obj;
	struct bpf_map *map;
	char *log, *p, *end;
	int top = 40, err;

	if (argc < 3)
		die("usage: vprofile OBJ PROG [NAME=VALUE...] [-n TOP]");
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj)
		die("open %s", argv[1]);
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc)
			top = atoi(argv[++i]);
		else
			rodata_set(obj, argv[i]);
	}
	bpf_object__for_each_map(map, obj)
		bpf_map__set_pin_path(map, NULL);	/* never touch pinned maps */
	bpf_object__for_each_program(prog, obj)
		bpf_program__set_autoload(prog, !strcmp(bpf_program__name(prog), argv[2]));
	prog = bpf_object__find_program_by_name(obj, argv[2]);
	log = malloc(LOG_SIZE);
	if (!prog || !log)
		die("%s: no program %s, or no memory for its log", argv[1], argv[2]);
	log[0] = 0;
	/* Level 2: level 1 keeps only the path to an error. */
	bpf_program__set_log_level(prog, 2);
	bpf_program__set_log_buf(prog, log, LOG_SIZE);
	err = bpf_object__load(obj);
	if (err)
		fprintf(stderr, "vprofile: %s refused (%s): the profile is of the walk until then\n",
			argv[2], strerror(-err));
	for (p = log; *p; p = end + (*end == '\n')) {
		long idx;
		char *q;

		end = strchrnul(p, '\n');
		if (p[0] == ';' && p[1] == ' ') {
			struct line_count *l = line_of(p + 2, end - p - 2);

			cur = l ? l : &none;
			continue;
		}
		idx = strtol(p, &q, 10);
		if (q == p || q[0] != ':' || q[1] != ' ')
			continue;
		if (!strncmp(q + 2, "safe", 4)) {
			cur->pruned++, pruned++;
			continue;
		}
		if (q[2] != '(')
			continue;	/* a state, not an instruction */
		if (cur->first < 0)
			cur->first = idx;
		cur->insns++, insns++;
	}
	qsort(lines, nlines, sizeof(lines[0]), by_insns);
	for (int i = 0; i < nlines && i < top; i++)
		printf("%8lu %6lu %6ld  %.*s\n", lines[i].insns, lines[i].pruned, lines[i].first,
		       (int)(lines[i].len > 100 ? 100 : lines[i].len), lines[i].text);
	printf("%8lu %6lu total over %d source lines (%s)\n", insns, pruned, nlines,
	       err ? "refused" : "loaded");
	bpf_object__close(obj);
	return err ? 1 : 0;
}
