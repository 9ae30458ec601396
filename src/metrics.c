// SPDX-License-Identifier: GPL-2.0
/*
 * Prometheus text exposition format 0.0.4: for each metric a HELP and a
 * TYPE line, then one sample per cgroup, grouped by metric as the format
 * requires. Label values are escaped (\\ \" \n) and made valid UTF-8.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "bypass.h"
#include "container_name.h"
#include "host_tcp_mem.h"
#include "metrics.h"
#include "tables.h"

#define PAGE_BYTES 4096ULL

enum value_kind { V_USAGE, V_PEAK, V_SOCKETS, V_LIMIT, V_MIN, V_PRESSURE, V_MAX, V_FAILCNT,
		  V_SYN_DROPS, V_PRESSURE_EVENTS, V_SOCK_THROTTLED, V_UNACCOUNTED };

static const struct metric {
	const char *name, *type, *help;
	enum value_kind kind;
} metrics[] = {
	{ "tcpbufd_cgroup_usage_bytes", "gauge",
	  "TCP buffer memory held by the sockets of the cgroup and its descendants.", V_USAGE },
	{ "tcpbufd_cgroup_peak_bytes", "gauge",
	  "Highest tcpbufd_cgroup_usage_bytes seen since tcpbufd began tracking the cgroup.",
	  V_PEAK },
	{ "tcpbufd_cgroup_sockets", "gauge",
	  "TCP sockets of the cgroup and its descendants holding buffer memory.", V_SOCKETS },
	{ "tcpbufd_cgroup_unaccounted_sockets", "gauge",
	  "Sockets of the cgroup and its descendants whose socket storage could not be made "
	  "(net.core.optmem_max), held to the limit through tcpbufd's fallback table.",
	  V_UNACCOUNTED },
	{ "tcpbufd_cgroup_limit_bytes", "gauge",
	  "The administrator's ceiling for the cgroup (absent: none).", V_LIMIT },
	{ "tcpbufd_cgroup_min_bytes", "gauge",
	  "Threshold below which the cgroup leaves pressure (absent: not set).", V_MIN },
	{ "tcpbufd_cgroup_pressure_bytes", "gauge",
	  "Threshold at which the cgroup enters pressure (absent: not set).", V_PRESSURE },
	{ "tcpbufd_cgroup_max_bytes", "gauge",
	  "Usage the cgroup may not pass (absent: not set).", V_MAX },
	{ "tcpbufd_cgroup_failcnt_total", "counter",
	  "Segments refused because the cgroup was at its max.", V_FAILCNT },
	{ "tcpbufd_cgroup_syn_drops_total", "counter",
	  "SYNs its listeners refused while the cgroup had just become crowded, before their "
	  "small MSS was set (the client retries a second later).", V_SYN_DROPS },
	{ "tcpbufd_cgroup_pressure_events_total", "counter",
	  "Times the cgroup entered pressure.", V_PRESSURE_EVENTS },
	{ "tcpbufd_cgroup_sock_throttled_total", "counter",
	  "The kernel's memory.events sock_throttled of a limited cgroup (absent: the kernel "
	  "or the cgroup has none).", V_SOCK_THROTTLED },
};

static const char *const states[] = { "normal", "pressure", "max" };

/* Length of the valid UTF-8 sequence at s (RFC 3629), 0 if there is none. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		n = 2, cp = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3, cp = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* A label value: \\, \" and \n escaped; bytes that are not UTF-8 become U+FFFD. */
static void label_value(FILE *f, const char *v)
{
	const unsigned char *s = (const unsigned char *)v;
	size_t n;

	fputc('"', f);
	while (*s) {
		if (*s == '\\' || *s == '"') {
			fputc('\\', f);
			fputc(*s++, f);
		} else if (*s == '\n') {
			fputs("\\n", f);
			s++;
		} else if ((n = utf8_len(s))) {
			fwrite(s, 1, n, f);
			s += n;
		} else {
			fputs("\xef\xbf\xbd", f);
			s++;
		}
	}
	fputc('"', f);
}

/* The cgroup's labels: its path, and container_id/pod_uid where the path names them
 * (@names[i], read once per row; NULL: read here). */
static void cgroup_labels(FILE *f, const char *path, const struct container_name *names, size_t i)
{
	struct container_name own;
	const struct container_name *cn = names ? &names[i] : &own;

	fputs("{cgroup=", f);
	label_value(f, path);
	if (!names)
		container_name_from_path(path, &own);
	if (cn->container_id[0])
		fprintf(f, ",container_id=\"%s\"", cn->container_id);
	if (cn->pod_uid[0])
		fprintf(f, ",pod_uid=\"%s\"", cn->pod_uid);
}

static __u64 nonneg(__s64 v)
{
	return v < 0 ? 0 : v;
}

/* The row's value for kind; false when the row has none (a threshold not set). */
static bool row_value(const struct status_row *r, enum value_kind kind, unsigned long long *v)
{
	const struct cgroup_limits *l = &r->limits;
	__u64 pages;

	switch (kind) {
	case V_USAGE:	 *v = nonneg(r->usage.usage_pages) * PAGE_BYTES; return true;
	case V_PEAK:	 *v = nonneg(r->usage.peak_pages) * PAGE_BYTES; return true;
	case V_SOCKETS:	 *v = nonneg(r->usage.sockets); return true;
	case V_UNACCOUNTED: *v = r->usage.unaccounted_sockets; return true;
	case V_FAILCNT:	 *v = r->usage.failcnt; return true;
	case V_SYN_DROPS: *v = r->usage.established.syn_drops; return true;
	case V_PRESSURE_EVENTS: *v = r->usage.pressure_events; return true;
	case V_SOCK_THROTTLED: *v = (unsigned long long)r->sock_throttled; return r->sock_throttled >= 0;
	case V_LIMIT:	 pages = l->limit_pages; break;
	case V_MIN:	 pages = l->min_pages; break;
	case V_PRESSURE: pages = l->pressure_pages; break;
	case V_MAX:	 pages = l->max_pages; break;
	default:	 return false;
	}
	*v = pages * PAGE_BYTES;
	return r->has_limits && pages;
}

static void header(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The host's TCP memory against net.ipv4.tcp_mem, where the daemon can read them. */
static void host_tcp_mem_print(FILE *f)
{
	static const char *const lines[] = { "min", "pressure", "max" };
	struct host_tcp_mem h;

	host_tcp_mem_read(&h);
	header(f, "tcpbufd_host_tcp_usage_bytes", "gauge",
	       "TCP buffer memory of the whole host (/proc/net/sockstat TCP mem).");
	if (h.has_usage)
		fprintf(f, "tcpbufd_host_tcp_usage_bytes %llu\n",
			(unsigned long long)h.usage_pages * PAGE_BYTES);
	header(f, "tcpbufd_host_tcp_mem_bytes", "gauge",
	       "The host's net.ipv4.tcp_mem thresholds (min, pressure, max).");
	if (h.has_limits) {
		const uint64_t v[] = { h.min_pages, h.pressure_pages, h.max_pages };

		for (size_t i = 0; i < 3; i++)
			fprintf(f, "tcpbufd_host_tcp_mem_bytes{threshold=\"%s\"} %llu\n", lines[i],
				(unsigned long long)v[i] * PAGE_BYTES);
	}
}

/* BypassProtMem's state (1 for the current one) and its sockets. */
static void metrics_print_bypass(FILE *f)
{
	static const enum bypass_state all[] = { BYPASS_OFF, BYPASS_ON, BYPASS_UNSUPPORTED };
	uint64_t sockets, refused;

	header(f, "tcpbufd_bypass_prot_mem", "gauge",
	       "BypassProtMem: 1 for the current state (off, on, unsupported), 0 for the others.");
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		fprintf(f, "tcpbufd_bypass_prot_mem{state=\"%s\"} %d\n", bypass_state_name(all[i]),
			bypass_current() == all[i]);
	bypass_counts(&sockets, &refused);
	header(f, "tcpbufd_bypass_prot_mem_sockets_total", "counter",
	       "New TCP sockets of limited cgroups taken out of the global tcp_mem.");
	fprintf(f, "tcpbufd_bypass_prot_mem_sockets_total %llu\n", (unsigned long long)sockets);
	header(f, "tcpbufd_bypass_prot_mem_refused_total", "counter",
	       "Sockets for which the kernel refused SK_BPF_BYPASS_PROT_MEM.");
	fprintf(f, "tcpbufd_bypass_prot_mem_refused_total %llu\n", (unsigned long long)refused);
}

void metrics_print(FILE *f, const struct status_rows *rows, const char *mode,
		   unsigned limited_cgroups)
{
	struct container_name *names = calloc(rows->n ? rows->n : 1, sizeof(*names));
	struct fallback_fill fb;
	unsigned long long v;
	size_t m, i, s;

	for (i = 0; names && i < rows->n; i++)
		container_name_from_path(rows->rows[i].host_path ? rows->rows[i].host_path
								   : rows->rows[i].path, &names[i]);

	header(f, "tcpbufd_build_info", "gauge",
	       "tcpbufd's version and the accounting mode it runs; always 1.");
	fputs("tcpbufd_build_info{version=", f);
	label_value(f, TCPBUFD_VERSION);
	fputs(",mode=", f);
	label_value(f, mode);
	fputs("} 1\n", f);
	header(f, "tcpbufd_limited_cgroups", "gauge", "Cgroups that have limits in the kernel.");
	fprintf(f, "tcpbufd_limited_cgroups %u\n", limited_cgroups);
	host_tcp_mem_print(f);
	metrics_print_bypass(f);
	tables_print_metrics(f);
	header(f, "tcpbufd_cgroups_refused_total", "counter",
	       "New cgroups a rule matched that were left unlimited: the cgroup tables had no room.");
	fprintf(f, "tcpbufd_cgroups_refused_total %lu\n", tables_refused());
	if (!tables_fallback_read(&fb)) {
		header(f, "tcpbufd_fallback_lost_sockets_total", "counter",
		       "Sockets of limited cgroups with neither socket storage nor room in "
		       "sock_fallback: held at the floor buffer sizes and refused at ingress.");
		fprintf(f, "tcpbufd_fallback_lost_sockets_total %llu\n", fb.lost);
	}

	for (m = 0; m < sizeof(metrics) / sizeof(metrics[0]); m++) {
		header(f, metrics[m].name, metrics[m].type, metrics[m].help);
		for (i = 0; i < rows->n; i++) {
			if (!rows->rows[i].path || !row_value(&rows->rows[i], metrics[m].kind, &v))
				continue;
			fputs(metrics[m].name, f);
			cgroup_labels(f, rows->rows[i].path, names, i);
			fprintf(f, "} %llu\n", v);
		}
	}

	header(f, "tcpbufd_cgroup_state", "gauge",
	       "1 for the cgroup's current state (normal, pressure or max), 0 for the others.");
	for (i = 0; i < rows->n; i++) {
		const char *cur = tcpbuf_state_name(rows->rows[i].usage.state);

		if (!rows->rows[i].path)
			continue;
		for (s = 0; s < sizeof(states) / sizeof(states[0]); s++) {
			fputs("tcpbufd_cgroup_state", f);
			cgroup_labels(f, rows->rows[i].path, names, i);
			fprintf(f, ",state=\"%s\"} %d\n", states[s], !strcmp(cur, states[s]));
		}
	}
	free(names);
}
