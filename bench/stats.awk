# stats.awk: summarise interleaved benchmark rounds (POSIX awk; mawk and gawk).
#
# Input lines: TEST CONFIG ROUND VALUE   (e.g. "rr 1 7 145023.4"); other lines
# are ignored. Config 0 is the baseline. For every test and config it prints
# the median, min-max and, against config 0 of the same round, the median of
# the paired ratios with a distribution-free 95% confidence interval: the
# order statistics x(k), x(n+1-k) of the sorted ratios, k the largest with
# 1 - 2 P(Binomial(n, 1/2) <= k-1) >= 0.95 (needs n >= 6).
#
#   awk -v labels='no tcpbufd|accounting only|limit not reached|pressure' \
#       -v units='rr=transactions/s,stream=Mbit/s' -f stats.awk results.txt
# With -v tsv=1 it prints one tab-separated row per test and config instead:
#   test config n median min max ratio lo hi halfwidth_pct coverage
function isort(a, n,    i, j, t) {
	for (i = 2; i <= n; i++) {
		t = a[i]
		for (j = i - 1; j >= 1 && a[j] > t; j--)
			a[j + 1] = a[j]
		a[j + 1] = t
	}
}
function median(a, n) {
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
# P(Binomial(n, 1/2) <= k), summed in floating point (n is small).
function binom_cdf(k, n,    i, p, s) {
	p = 0.5 ^ n
	s = 0
	for (i = 0; i <= k; i++) {
		s += p
		p = p * (n - i) / (i + 1)
	}
	return s
}
# Sets CI_K and CI_COVER for n samples; CI_K = 0 when n is too small.
function ci_rank(n,    k, cover) {
	CI_K = 0
	CI_COVER = 0
	for (k = 1; 2 * k <= n; k++) {
		cover = 1 - 2 * binom_cdf(k - 1, n)
		if (cover < 0.95)
			break
		CI_K = k
		CI_COVER = cover
	}
}
NF == 4 && $3 ~ /^[0-9]+$/ && $4 ~ /^[0-9.]+$/ {
	if (!($1 in seen_test)) {
		seen_test[$1] = 1
		tests[++ntests] = $1
	}
	if (!(($1, $2) in seen_cfg)) {
		seen_cfg[$1, $2] = 1
		ncfg[$1]++
		cfgs[$1, ncfg[$1]] = $2
	}
	val[$1, $2, $3] = $4
	if (!(($1, $2, $3) in have)) {
		have[$1, $2, $3] = 1
		rounds[$1, $2, ++nr[$1, $2]] = $3
	}
}
END {
	# labels: "A|B|..." for configurations 0, 1, ... or "0=A|2n=B|...".
	nl = split(labels, lab, "|")
	for (i = 1; i <= nl; i++)
		if ((j = index(lab[i], "=")))
			label[substr(lab[i], 1, j - 1)] = substr(lab[i], j + 1)
		else
			label[i - 1] = lab[i]
	nu = split(units, upairs, ",")
	for (i = 1; i <= nu; i++) {
		split(upairs[i], kv, "=")
		unit[kv[1]] = kv[2]
	}
	for (t = 1; t <= ntests; t++) {
		test = tests[t]
		if (!tsv) {
			printf "%s (%s)\n", test, (test in unit) ? unit[test] : "value"
			printf "  %-24s %5s %12s %25s %9s %20s %8s\n", "configuration", "n", "median",
				"min-max", "ratio", "95% CI of ratio", "+/-"
		}
		for (c = 1; c <= ncfg[test]; c++) {
			cfg = cfgs[test, c]
			n = 0
			m = 0
			for (r = 1; r <= nr[test, cfg]; r++) {
				rd = rounds[test, cfg, r]
				x[++n] = val[test, cfg, rd]
				if (cfg != 0 && ((test, 0, rd) in have) && val[test, 0, rd] > 0)
					ratio[++m] = val[test, cfg, rd] / val[test, 0, rd]
			}
			isort(x, n)
			med = median(x, n)
			name = ((cfg "") in label) ? "(" cfg ") " label[cfg ""] : "(" cfg ")"
			rs = "-"
			cis = "-"
			hw = "-"
			lo = hi = rmed = ""
			if (m > 0) {
				isort(ratio, m)
				rmed = median(ratio, m)
				rs = sprintf("%.4f", rmed)
				ci_rank(m)
				if (CI_K) {
					lo = ratio[CI_K]
					hi = ratio[m + 1 - CI_K]
					cis = sprintf("[%.4f, %.4f]", lo, hi)
					hw = sprintf("%.2f%%", (hi - lo) / 2 * 100)
				} else {
					cis = "(n<6)"
				}
			}
			if (tsv)
				printf "%s\t%s\t%d\t%.1f\t%.1f\t%.1f\t%s\t%s\t%s\t%s\t%s\n", test, cfg, n, med,
					x[1], x[n], rmed, lo, hi,
					(lo == "" ? "" : sprintf("%.3f", (hi - lo) / 2 * 100)),
					(CI_K && m ? sprintf("%.3f", CI_COVER) : "")
			else
				printf "  %-24s %5d %12.1f %25s %9s %20s %8s\n", name, n, med,
					sprintf("%.1f-%.1f", x[1], x[n]), rs, cis, hw
			CI_K = 0
		}
	}
}
