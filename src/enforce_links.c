// SPDX-License-Identifier: GPL-2.0
/*
 * The enforcer's links: cgroup links pinned under <pin>/links/ (moved in
 * place on a restart), the ingress links of the topmost limited cgroups, and
 * linking what runs per segment while some limited cgroup is near.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "enforce.skel.h"
#include "array.h"
#include "bpffs.h"
#include "demand.h"
#include "log.h"
#include "enforcer.h"
#include "tcpbuf_policy.h"

int enforce_link_path(const struct enforcer *e, char *buf, size_t len, const char *name)
{
	return bpffs_path(buf, len, e->pin_path, "links/", name);
}

bool path_within(const char *path, const char *top)
{
	size_t n = strlen(top);

	if (!strcmp(top, "/"))
		return true;
	return !strncmp(path, top, n) && (path[n] == '\0' || path[n] == '/');
}

int cgroup_open(const struct enforcer *e, const char *rel)
{
	char path[PATH_MAX];
	int fd;

	if (snprintf(path, sizeof(path), "%s%s", e->mount, strcmp(rel, "/") ? rel : "") >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* ----------------------------------------------------- pinned cgroup links */

/* Attach @prog to the cgroup at @rel and pin the link as links/@name. A link
 * already pinned there moves to @prog in place when it is on that cgroup;
 * otherwise it is replaced. */
int cgroup_link_ensure(struct enforcer *e, struct bpf_program *prog, const char *rel,
		       const char *name, int *link_fd)
{
	struct bpf_link_info info = {};
	__u32 info_len = sizeof(info);
	char path[PATH_MAX];
	struct bpf_link *link;
	int cg_fd, fd, err;
	struct stat st;

	err = enforce_link_path(e, path, sizeof(path), name);
	if (err)
		return err;
	cg_fd = cgroup_open(e, rel);
	if (cg_fd < 0)
		return cg_fd;
	if (fstat(cg_fd, &st)) {
		err = -errno;
		close(cg_fd);
		return err;
	}
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		if (!bpf_obj_get_info_by_fd(fd, &info, &info_len) &&
		    info.type == BPF_LINK_TYPE_CGROUP && info.cgroup.cgroup_id == st.st_ino &&
		    !bpf_link_update(fd, bpf_program__fd(prog), NULL)) {
			close(cg_fd);
			*link_fd = fd;
			return 0;
		}
		close(fd);
		unlink(path);
	}
	link = bpf_program__attach_cgroup(prog, cg_fd);
	close(cg_fd);
	if (!link)
		return -errno;
	err = bpf_link__pin(link, path);
	if (!err)
		*link_fd = dup(bpf_link__fd(link));
	bpf_link__destroy(link);	/* the pin keeps it attached */
	return err;
}

/* Index of the first ingress link with an id >= @id (they are sorted by id). */
static size_t ingress_index(const struct enforcer *e, uint64_t id)
{
	size_t lo = 0, hi = e->n_ingress;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->ingress[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct ingress_link *ingress_find(const struct enforcer *e, uint64_t id)
{
	size_t i = ingress_index(e, id);

	return i < e->n_ingress && e->ingress[i].id == id ? &e->ingress[i] : NULL;
}

static int ingress_reserve(struct enforcer *e, size_t n)
{
	size_t cap = e->ingress_cap ? e->ingress_cap : 64;
	void *p;

	if (n <= e->ingress_cap)
		return 0;
	while (cap < n)
		cap *= 2;
	p = realloc(e->ingress, cap * sizeof(*e->ingress));
	if (!p)
		return -ENOMEM;
	e->ingress = p;
	e->ingress_cap = cap;
	return 0;
}

static int ingress_insert(struct enforcer *e, struct ingress_link l)
{
	size_t i = ingress_index(e, l.id);

	if (ingress_reserve(e, e->n_ingress + 1))
		return -ENOMEM;
	memmove(&e->ingress[i + 1], &e->ingress[i], (e->n_ingress - i) * sizeof(*e->ingress));
	e->ingress[i] = l;
	e->n_ingress++;
	return 0;
}

static void ingress_detach(struct enforcer *e, size_t i)
{
	char name[64], path[PATH_MAX];

	snprintf(name, sizeof(name), "ingress-%llu", (unsigned long long)e->ingress[i].id);
	if (!enforce_link_path(e, path, sizeof(path), name))
		unlink(path);
	/* Detach now even if someone else holds the link open. */
	bpf_link_detach(e->ingress[i].fd);
	close(e->ingress[i].fd);
	memmove(&e->ingress[i], &e->ingress[i + 1], (e->n_ingress - i - 1) * sizeof(*e->ingress));
	e->n_ingress--;
}

static int ingress_cmp(const void *a, const void *b)
{
	const struct ingress_link *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Ingress links a previous daemon left pinned: move them onto our program. */
void ingress_adopt(struct enforcer *e)
{
	char dir[PATH_MAX], path[PATH_MAX];
	struct dirent *de;
	DIR *d;

	if (enforce_link_path(e, dir, sizeof(dir), ""))
		return;
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		unsigned long long id;
		int fd;

		if (sscanf(de->d_name, "ingress-%llu", &id) != 1)
			continue;
		if (snprintf(path, sizeof(path), "%s%s", dir, de->d_name) >= (int)sizeof(path))
			continue;
		fd = bpf_obj_get(path);
		if (fd < 0 || bpf_link_update(fd, bpf_program__fd(e->ingress_prog), NULL)) {
			if (fd >= 0)
				close(fd);
			unlink(path);
			continue;
		}
		if (ingress_reserve(e, e->n_ingress + 1)) {
			close(fd);
			break;
		}
		e->ingress[e->n_ingress++] = (struct ingress_link){ .id = id, .fd = fd };
	}
	closedir(d);
	qsort(e->ingress, e->n_ingress, sizeof(*e->ingress), ingress_cmp);
}

/* ---------------------------------------------------- topmost cgroups */

/*
 * A limited cgroup below another one is covered by its ancestor's ingress
 * program (cgroup programs run for the whole subtree): only the topmost
 * limited cgroups of the scope get one.
 */
static int top_cmp(const void *a, const void *b)
{
	const struct enforce_cgroup *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* The index of @id among the topmost limited cgroups (sorted by id), -1 if
 * not one. */
long top_index(const struct enforcer *e, uint64_t id)
{
	struct enforce_cgroup key = { .id = id }, *t;

	t = e->n_tops ? bsearch(&key, e->tops, e->n_tops, sizeof(*e->tops), top_cmp) : NULL;
	return t ? t - e->tops : -1;
}

static bool tops_have(const struct enforcer *e, uint64_t id)
{
	return top_index(e, id) >= 0;
}

/* Append; tops_sort() once done. */
int tops_add(struct enforcer *e, const struct enforce_cgroup *cg)
{
	char *path;

	if (cg->covered || tops_have(e, cg->id))
		return 0;
	if (!path_within(cg->path, e->scope)) {
		log_warn("%s: outside the scope %s; limits are not enforced there", cg->path,
			 e->scope);
		return 0;
	}
	if (array_reserve(e->tops, e->tops_cap, e->n_tops, 16))
		return -ENOMEM;
	path = strdup(cg->path);
	if (!path)
		return -ENOMEM;
	e->tops[e->n_tops++] = (struct enforce_cgroup){ .id = cg->id, .path = path };
	return 0;
}

void tops_remove(struct enforcer *e, uint64_t id)
{
	for (size_t i = 0; i < e->n_tops; i++) {
		if (e->tops[i].id != id)
			continue;
		free((char *)e->tops[i].path);
		memmove(&e->tops[i], &e->tops[i + 1], (--e->n_tops - i) * sizeof(*e->tops));
		return;
	}
}

void tops_clear(struct enforcer *e)
{
	for (size_t i = 0; i < e->n_tops; i++)
		free((char *)e->tops[i].path);
	e->n_tops = 0;
}

void tops_sort(struct enforcer *e)
{
	qsort(e->tops, e->n_tops, sizeof(*e->tops), top_cmp);
}

static int ingress_attach(struct enforcer *e, const struct enforce_cgroup *cg)
{
	struct ingress_link l = { .id = cg->id };
	char name[64];
	int r;

	if (ingress_find(e, cg->id))
		return 0;
	snprintf(name, sizeof(name), "ingress-%llu", (unsigned long long)cg->id);
	r = cgroup_link_ensure(e, e->ingress_prog, cg->path, name, &l.fd);
	/* Removed meanwhile: nothing left to enforce there, and its removal,
	 * on its way, takes it off the list. Churn would log it each sync. */
	if (r == -ENOENT) {
		log_debug("%s: gone before ingress refusal could be attached", cg->path);
		return 0;
	}
	if (r) {
		log_err("%s: cannot attach ingress refusal: %s", cg->path, strerror(-r));
		return r;
	}
	r = ingress_insert(e, l);
	if (r) {
		close(l.fd);
		return r;
	}
	log_debug("%s: ingress refusal attached", cg->path);
	return 0;
}

/*
 * Whether some limited cgroup turns near at its first socket
 * (tcpbuf_near_next()). Its ingress is linked from its limit on: a burst of
 * connections into it then meets ingress (the SYN drop while it turns
 * crowded) at once, not once the daemon has answered that first socket.
 * Meanwhile each segment to a limited subtree pays ingress's first lookups
 * (a socket not armed passes there): with today's sysctls, limits under
 * twice a socket's reach, i.e. most containers', keep ingress linked.
 */
static bool near_at_first_socket(const struct enforcer *e)
{
	for (size_t i = 0; i < e->n_limits; i++) {
		const struct cgroup_limits *l = &e->limits[i].l;

		if (l->max_pages && tcpbuf_near_next(0, 1, e->skel->rodata->sock_bound_pages,
						     l->pressure_pages, l->max_pages))
			return true;
	}
	return false;
}

/* Whether a limited cgroup below another one turns near at its first
 * socket: that socket's segments are its topmost ancestor's ingress to
 * see, so none may rest (enforce_rest.c). */
static bool covered_near_at_first(const struct enforcer *e)
{
	for (size_t i = 0; i < e->n_limits; i++) {
		const struct cgroup_limits *l = &e->limits[i].l;

		if (l->max_pages && !tops_have(e, e->limits[i].id) &&
		    tcpbuf_near_next(0, 1, e->skel->rodata->sock_bound_pages, l->pressure_pages,
				     l->max_pages))
			return true;
	}
	return false;
}

/* Ingress links at every topmost limited cgroup while some cgroup is near
 * (near_links()) or would be at its first socket, or a socket was held
 * without any entry (lost_seen), at none otherwise; but at none that rests
 * (enforce_rest.c). */
int ingress_sync(struct enforcer *e)
{
	bool on = e->near == 1 || e->lost_seen || near_at_first_socket(e);
	bool *rests = NULL;	/* per top: it rests (rest_prepare()) */
	size_t resting = 0;
	int err = 0;

	if (on && !covered_near_at_first(e) && rest_begin(e)) {
		rests = calloc(e->n_tops ? e->n_tops : 1, sizeof(*rests));
		if (!rests)
			return -ENOMEM;
		if (!rest_prepare(e, rests)) {
			free(rests);
			rests = NULL;
		}
	}
	for (size_t i = 0; i < e->n_ingress;) {
		long t = on ? top_index(e, e->ingress[i].id) : -1;

		if (t >= 0 && !(rests && rests[t]))
			i++;
		else
			ingress_detach(e, i);
	}
	for (size_t i = 0; on && i < e->n_tops; i++) {
		int r;

		if (rests && rests[i]) {
			resting++;
			continue;
		}
		r = ingress_attach(e, &e->tops[i]);
		if (r == -ENOMEM) {
			free(rests);
			return r;
		}
		err = err ?: r;
	}
	free(rests);
	rest_end(e, resting);
	return err;
}

enum enforce_ingress enforce_ingress_of(const struct enforcer *e, uint64_t id)
{
	__u8 v;

	if (top_index(e, id) < 0)
		return ENFORCE_INGRESS_NONE;
	if (ingress_find(e, id))
		return ENFORCE_INGRESS_LINKED;
	if (e->resting && !bpf_map_lookup_elem(bpf_map__fd(e->skel->maps.rest_tops), &id, &v))
		return ENFORCE_INGRESS_RESTING;
	return ENFORCE_INGRESS_OFF;
}

/* ---------------------------------------------------------- near, far */

/*
 * The counts the programs keep in enforce_ctl (ctl_count()) move where they
 * move the bits (near_swap(), dormant_swap()), not a lookup per limited
 * cgroup at each near or far event. Only a limited cgroup is ever near or
 * dormant (near_update(), limits_refresh). An entry deleted with a bit would
 * leave its count one over, which only keeps what follows linked; the daemon
 * deletes only entries whose limits went, which limits_refresh cleared.
 */

/* In sampled mode a dormant cgroup needs the samplers too: they follow its
 * sockets. */
bool near_any(struct enforcer *e)
{
	return ctl_count(&e->ctl->near_cgroups) ||
	       (e->mode == TCPBUF_MODE_SAMPLED && ctl_count(&e->ctl->dormant_cgroups));
}

/* The samplers follow sockets: wanted while some limited cgroup is near, or
 * dormant without being bounded too (sampled mode, tcpbuf_bounded_share(): its
 * ingress sees each segment that could take it past its bound). */
bool samplers_wanted(struct enforcer *e)
{
	unsigned near = ctl_count(&e->ctl->near_cgroups);
	unsigned followed = e->mode == TCPBUF_MODE_SAMPLED ? ctl_count(&e->ctl->followed_cgroups) : 0;

	if (near || followed)
		log_debug("%u limited cgroups near, %u dormant and followed: samplers wanted", near,
			  followed);
	return near || followed;
}

/* Samplers linked (@on) or not, and enforce_ctl.near_linked told: cleared
 * before they go, set once they are there (ctl_update()). */
static int samplers_set(struct enforcer *e, bool on)
{
	int err;

	if (!on && e->samplers_on) {
		e->samplers_on = false;
		ctl_update(e, e->limited, e->near == 1);
	}
	err = demand_links_set(e->pin_path, on);
	if (on && !e->samplers_on && !err) {
		e->samplers_on = true;
		err = ctl_update(e, e->limited, e->near == 1);
	}
	return err;
}

/* Samplers linked or not as samplers_wanted() says, while the rest of
 * per-segment enforcement is on (near_links()). */
int samplers_sync(struct enforcer *e)
{
	return samplers_set(e, e->near == 1 && samplers_wanted(e));
}

/*
 * What runs for every segment or syscall runs only while some limited cgroup
 * is near (tcpbuf_near_next()): the per-syscall samplers (demand.c) and
 * ingress refusal at every topmost limited cgroup. Far cgroups' sockets
 * are not armed, so ingress lets theirs pass at the first lookup.
 */
int near_links(struct enforcer *e, bool on)
{
	bool quiet = e->near == -1 && !on;	/* at start, nothing was on */
	int err = 0;

	if (e->near == on)
		return 0;
	/* BPF wakes us for a cgroup turning near by its only socket only while
	 * this is clear: cleared before unlinking, set once linked. */
	if (!on)
		err = ctl_update(e, e->limited, false);
	err = samplers_set(e, on && samplers_wanted(e)) ?: err;
	e->near = on;
	err = ingress_sync(e) ?: err;
	if (on)
		err = ctl_update(e, e->limited, true) ?: err;
	if (!quiet)
		log_info("%s: per-segment enforcement %s", on ? "a limited cgroup is near its thresholds" :
		 "every limited cgroup is far from its thresholds", on ? "on" : "off");
	return err;
}

/* A change of limits to more cgroups than this sweeps every socket: each
 * changed subtree costs an iterator run to collect. */
