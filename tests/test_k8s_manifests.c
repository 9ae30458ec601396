// SPDX-License-Identifier: GPL-2.0
/*
 * deploy/kubernetes/tcpbufd.yaml grants what systemd/tcpbufd.service grants,
 * no more: the unit's set is the one tests/test_caps.c proves both enough
 * and each necessary.
 *  - The daemon's container drops ALL and adds exactly the unit's
 *    CapabilityBoundingSet= (without CAP_), is not privileged and cannot
 *    gain privileges; every other container adds none.
 *  - The daemon's writable host paths are exactly the unit's writable
 *    places (ReadWritePaths=, RuntimeDirectory=, StateDirectory=,
 *    ConfigurationDirectory=); the cgroup mount is read-only, as
 *    ProtectControlGroups= makes it; nothing else of the host.
 *  - hostPID and hostNetwork are on: the daemon's netns is the host's, the
 *    reason the unit has no PrivateNetwork=, and it enters each pod's
 *    through one of the pod's processes, as the unit sees them all.
 *  - The ConfigMap's tcpbufd.conf puts socket, RuntimeDir, StateDir and
 *    DropInDir on those host paths, and its hooks.json names the hook
 *    where the init container installs it, in a hooks.d directory.
 * Parsed with libyaml (every document of the file), JSON with json-c.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "sdunit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>
#include <yaml.h>

#define MANIFEST "deploy/kubernetes/tcpbufd.yaml"

static yaml_document_t docs[8];
static int ndocs;

static yaml_node_t *node(yaml_document_t *d, int i)
{
	return i ? yaml_document_get_node(d, i) : NULL;
}

static const char *scalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* The value of @key in mapping @m; NULL if absent or @m is not a mapping. */
static yaml_node_t *get(yaml_document_t *d, yaml_node_t *m, const char *key)
{
	if (!m || m->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		const char *k = scalar(node(d, p->key));

		if (k && !strcmp(k, key))
			return node(d, p->value);
	}
	return NULL;
}

/* get() along a dotted path: "spec.template.spec". */
static yaml_node_t *path(yaml_document_t *d, yaml_node_t *m, const char *dotted)
{
	char buf[256], *save, *k;

	snprintf(buf, sizeof(buf), "%s", dotted);
	for (k = strtok_r(buf, ".", &save); k && m; k = strtok_r(NULL, ".", &save))
		m = get(d, m, k);
	return m;
}

static size_t seq_len(yaml_node_t *s)
{
	return s && s->type == YAML_SEQUENCE_NODE
		       ? (size_t)(s->data.sequence.items.top - s->data.sequence.items.start) : 0;
}

static yaml_node_t *seq_at(yaml_document_t *d, yaml_node_t *s, size_t i)
{
	return i < seq_len(s) ? node(d, s->data.sequence.items.start[i]) : NULL;
}

static bool is_true(yaml_node_t *n)
{
	return scalar(n) && !strcmp(scalar(n), "true");
}

static void load_manifest(void)
{
	FILE *f = fopen(MANIFEST, "r");
	yaml_parser_t p;

	ASSERT_TRUE(f != NULL);
	ASSERT_TRUE(yaml_parser_initialize(&p));
	yaml_parser_set_input_file(&p, f);
	for (;;) {
		ASSERT_LT(ndocs, 8);
		if (!yaml_parser_load(&p, &docs[ndocs])) {
			test_log("%s:%zu: %s", MANIFEST, p.problem_mark.line + 1, p.problem);
			ASSERT_TRUE(0);
		}
		if (!yaml_document_get_root_node(&docs[ndocs])) {
			yaml_document_delete(&docs[ndocs]);
			break;
		}
		ndocs++;
	}
	yaml_parser_delete(&p);
	fclose(f);
}

static yaml_document_t *find_kind(const char *kind)
{
	for (int i = 0; i < ndocs; i++) {
		const char *k = scalar(get(&docs[i], yaml_document_get_root_node(&docs[i]), "kind"));

		if (k && !strcmp(k, kind))
			return &docs[i];
	}
	return NULL;
}

/* "CAP_BPF" for the manifest's "BPF". */
static bool unit_has_cap(char **unit_caps, const char *k8s_name)
{
	char cap[64];

	snprintf(cap, sizeof(cap), "CAP_%s", k8s_name);
	return words_have(unit_caps, cap);
}

/* The host path behind volume @name. */
static const char *host_path(yaml_document_t *d, yaml_node_t *pod, const char *name)
{
	yaml_node_t *vols = get(d, pod, "volumes");

	for (size_t i = 0; i < seq_len(vols); i++) {
		yaml_node_t *v = seq_at(d, vols, i);
		const char *n = scalar(get(d, v, "name"));

		if (n && !strcmp(n, name))
			return scalar(path(d, v, "hostPath.path"));
	}
	return NULL;
}

/* What the unit lets the daemon write: ReadWritePaths= and its *Directory=. */
static char **unit_writable(void)
{
	static const struct { const char *key, *base; } dirs[] = {
		{ "RuntimeDirectory", "/run" }, { "StateDirectory", "/var/lib" },
		{ "ConfigurationDirectory", "/etc" },
	};
	char **rw = unit_words("ReadWritePaths"), **w;
	size_t n = 0;

	ASSERT_TRUE(rw != NULL);
	while (rw[n])
		n++;
	rw = realloc(rw, (n + 8) * sizeof(*rw));
	ASSERT_TRUE(rw != NULL);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		w = unit_words(dirs[i].key);
		for (size_t j = 0; w && w[j]; j++) {
			char *place;

			if (asprintf(&place, "%s/%s", dirs[i].base, w[j]) < 0)
				ASSERT_TRUE(0);
			rw[n] = NULL;
			/* Once each: ConfigurationDirectory= repeats a ReadWritePaths= entry. */
			if (words_have(rw, place))
				free(place);
			else
				rw[n++] = place;
		}
		words_free(w);
	}
	rw[n] = NULL;
	return rw;
}

static void check_caps(yaml_document_t *d, yaml_node_t *c, char **unit_caps, bool daemon)
{
	const char *name = scalar(get(d, c, "name"));
	yaml_node_t *sc = get(d, c, "securityContext");
	yaml_node_t *add = path(d, sc, "capabilities.add");
	yaml_node_t *drop = path(d, sc, "capabilities.drop");
	size_t n_unit = 0;

	test_log("container %s: %zu capabilities added", name, seq_len(add));
	EXPECT_EQ(seq_len(drop), 1);
	EXPECT_TRUE(scalar(seq_at(d, drop, 0)) && !strcmp(scalar(seq_at(d, drop, 0)), "ALL"));
	EXPECT_FALSE(is_true(get(d, sc, "privileged")));
	EXPECT_TRUE(scalar(get(d, sc, "allowPrivilegeEscalation")) &&
		    !strcmp(scalar(get(d, sc, "allowPrivilegeEscalation")), "false"));
	if (!daemon) {
		EXPECT_EQ(seq_len(add), 0);
		return;
	}
	for (size_t i = 0; i < seq_len(add); i++) {
		const char *cap = scalar(seq_at(d, add, i));

		if (!cap || !unit_has_cap(unit_caps, cap)) {
			test_log("%s adds %s, which the unit does not grant", name, cap ? cap : "?");
			test_fail();
		}
	}
	while (unit_caps[n_unit])
		n_unit++;
	EXPECT_EQ(seq_len(add), n_unit);
}

static void check_daemon_mounts(yaml_document_t *d, yaml_node_t *pod, yaml_node_t *c)
{
	char **rw = unit_writable();
	yaml_node_t *mounts = get(d, c, "volumeMounts");
	size_t writable = 0, n_rw = 0;
	bool cgroup_ro = false;

	while (rw[n_rw])
		n_rw++;
	for (size_t i = 0; i < seq_len(mounts); i++) {
		yaml_node_t *m = seq_at(d, mounts, i);
		const char *vol = scalar(get(d, m, "name")), *at = scalar(get(d, m, "mountPath"));
		const char *host = vol ? host_path(d, pod, vol) : NULL;
		bool ro = is_true(get(d, m, "readOnly"));

		if (!host)
			continue;	/* the ConfigMap */
		EXPECT_TRUE(at && !strcmp(at, host));	/* the daemon sees the host's paths */
		if (!strcmp(host, "/sys/fs/cgroup")) {
			cgroup_ro = ro;
			continue;
		}
		if (ro)
			continue;
		writable++;
		if (!words_have(rw, host)) {
			test_log("the daemon may write host path %s, which the unit does not let it",
				 host);
			test_fail();
		}
	}
	EXPECT_TRUE(cgroup_ro);
	EXPECT_EQ(writable, n_rw);
	words_free(rw);
}

/* tcpbufd.conf's KEY= value from the ConfigMap. */
static const char *conf_value(const char *conf, const char *key, char *buf, size_t len)
{
	char needle[64];
	const char *p;

	snprintf(needle, sizeof(needle), "\n%s=", key);
	p = strstr(conf, needle);
	if (!p)
		return NULL;
	p += strlen(needle);
	snprintf(buf, len, "%.*s", (int)strcspn(p, "\n"), p);
	return buf;
}

static void check_config(yaml_document_t *cm, yaml_document_t *ds, yaml_node_t *pod)
{
	yaml_node_t *data = get(cm, yaml_document_get_root_node(cm), "data");
	const char *conf = scalar(get(cm, data, "tcpbufd.conf"));
	const char *hooks = scalar(get(cm, data, "hooks.json"));
	char **rw = unit_writable(), v[256];
	json_object *h, *hp;

	ASSERT_TRUE(conf && hooks);
	EXPECT_TRUE(conf_value(conf, "RuntimeDir", v, sizeof(v)) && words_have(rw, v));
	EXPECT_TRUE(conf_value(conf, "StateDir", v, sizeof(v)) && words_have(rw, v));
	EXPECT_TRUE(conf_value(conf, "DropInDir", v, sizeof(v)) && words_have(rw, v));
	EXPECT_TRUE(conf_value(conf, "Socket", v, sizeof(v)) &&
		    !strcmp(v, "/run/tcpbufd/control.sock"));
	words_free(rw);

	h = json_tokener_parse(hooks);
	ASSERT_TRUE(h != NULL);
	ASSERT_TRUE(json_object_object_get_ex(h, "hook", &hp) &&
		    json_object_object_get_ex(hp, "path", &hp));
	/* The init container installs the hook there and the file in a hooks.d. */
	{
		yaml_node_t *init = seq_at(ds, get(ds, pod, "initContainers"), 0);
		yaml_node_t *mounts = get(ds, init, "volumeMounts");
		bool hook_dir = false, hooks_d = false;
		const char *hook = json_object_get_string(hp);

		for (size_t i = 0; i < seq_len(mounts); i++) {
			yaml_node_t *m = seq_at(ds, mounts, i);
			const char *host = host_path(ds, pod, scalar(get(ds, m, "name")));

			if (!host)
				continue;
			hook_dir |= !strncmp(hook, host, strlen(host)) && hook[strlen(host)] == '/';
			hooks_d |= !strcmp(host, "/etc/containers/oci/hooks.d") ||
				   !strcmp(host, "/usr/share/containers/oci/hooks.d");
		}
		EXPECT_TRUE(hook_dir);
		EXPECT_TRUE(hooks_d);
	}
	json_object_put(h);
}

int main(void)
{
	yaml_document_t *ds, *cm;
	yaml_node_t *pod, *containers;
	char **unit_caps;
	bool saw_daemon = false;

	test_init();
	if (access(UNIT_FILE, R_OK))
		SKIP("needs the repository (tests run from its root)");
	ASSERT_OK(access(MANIFEST, R_OK));
	unit_caps = unit_words("CapabilityBoundingSet");
	ASSERT_TRUE(unit_caps && unit_caps[0]);
	load_manifest();
	ds = find_kind("DaemonSet");
	cm = find_kind("ConfigMap");
	ASSERT_TRUE(ds && cm);
	pod = path(ds, yaml_document_get_root_node(ds), "spec.template.spec");
	ASSERT_TRUE(pod != NULL);
	EXPECT_TRUE(is_true(get(ds, pod, "hostPID")));
	EXPECT_TRUE(is_true(get(ds, pod, "hostNetwork")));
	EXPECT_FALSE(is_true(get(ds, pod, "hostIPC")));

	containers = get(ds, pod, "initContainers");
	for (size_t i = 0; i < seq_len(containers); i++)
		check_caps(ds, seq_at(ds, containers, i), unit_caps, false);
	containers = get(ds, pod, "containers");
	for (size_t i = 0; i < seq_len(containers); i++) {
		yaml_node_t *c = seq_at(ds, containers, i);
		const char *name = scalar(get(ds, c, "name"));
		bool daemon = name && !strcmp(name, "tcpbufd");

		check_caps(ds, c, unit_caps, daemon);
		if (daemon)
			check_daemon_mounts(ds, pod, c);
		saw_daemon |= daemon;
	}
	EXPECT_TRUE(saw_daemon);
	check_config(cm, ds, pod);
	words_free(unit_caps);
	for (int i = 0; i < ndocs; i++)
		yaml_document_delete(&docs[i]);
	return test_done();
}
