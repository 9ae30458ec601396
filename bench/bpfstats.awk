# bpfstats.awk: per-program cost from bench/run's bpf_stats pass (stats.txt).
#
# Input lines:
#   base TEST VALUE                     baseline transactions/s or Mbit/s
#   prog CONFIG TEST LINK NAME KIND RUNS NS UNITS SECONDS
#        RUNS/NS: run_cnt/run_time_ns deltas over one run; UNITS: transactions
#        (rr) or MB (stream) in that run; LINK "calibration": an empty program
#        on the same tracepoints, whose ns/run is what bpf_stats itself adds.
# -v rr_ab=, st_ab=: baseline medians from the interleaved phase (preferred
# over the base lines, which are single runs); -v rrc_ab=, stc_ab=: the
# per-CPU-second baselines, to state the cost against the CPU time of a
# transaction too (on a shared machine the wall-clock time includes waits).
#
# "net" ns/run = ns/run - the calibration's ns/run. Iterator programs run in
# the daemon's sweeps, not per transaction: they are shown per second.
$1 == "base" { base[$2] = $3; next }
$1 != "prog" { next }
{
	c = $2; t = $3; link = $4
	key = c SUBSEP t
	if (!(key in seen)) { seen[key] = 1; order[++nkeys] = key }
	if (link == "calibration") { calcnt[key] += $7; calns[key] += $8; next }
	n = ++nprog[key]
	pname[key, n] = $5; pkind[key, n] = $6; pcnt[key, n] = $7; pns[key, n] = $8
	units[key] = $9; secs[key] = $10
}
END {
	if (rr_ab != "") base["rr"] = rr_ab
	if (st_ab != "") base["stream"] = st_ab
	for (k = 1; k <= nkeys; k++) {
		key = order[k]
		split(key, ct, SUBSEP)
		c = ct[1]; t = ct[2]
		per = (t == "rr") ? "txn" : "MB"
		cal = calcnt[key] ? calns[key] / calcnt[key] : 0
		printf "(%s) %s: %.0f %s in %.1f s; bpf_stats' own cost per run (empty program): %.1f ns\n",
			c, t, units[key], (t == "rr") ? "transactions" : "MB", secs[key], cal
		printf "  %-18s %-10s %10s %9s %9s %11s %11s\n", "program", "kind", "runs", "ns/run",
			"net ns", "runs/" per, "net ns/" per
		add = 0; raw = 0
		for (i = 1; i <= nprog[key]; i++) {
			cnt = pcnt[key, i]; ns = pns[key, i]
			r = cnt ? ns / cnt : 0
			net = r - cal; if (net < 0) net = 0
			if (pkind[key, i] == "iter") {
				printf "  %-18s %-10s %10d %9.1f %9.1f %11s %11s  (daemon sweeps: %.0f runs/s)\n",
					pname[key, i], "iter", cnt, r, net, "-", "-", cnt / secs[key]
			} else {
				printf "  %-18s %-10s %10d %9.1f %9.1f %11.3f %11.1f\n", pname[key, i], pkind[key, i],
					cnt, r, net, cnt / units[key], cnt * net / units[key]
				add += cnt * net / units[key]
				raw += ns / units[key]
			}
			if (cnt && net > worst[c]) { worst[c] = net; worstname[c] = pname[key, i] "/" t }
		}
		total[key] = add; totalraw[key] = raw
		if (t == "rr" && base["rr"] > 0)
			printf "  added per transaction: %.0f ns net (%.0f ns raw) = %.2f%% (%.2f%%) of a baseline transaction, %.0f ns at %.0f/s\n",
				add, raw, add * base["rr"] / 1e7, raw * base["rr"] / 1e7, 1e9 / base["rr"], base["rr"]
		if (t == "rr" && rrc_ab > 0)
			printf "    = %.2f%% (%.2f%%) of its CPU time, %.0f ns at %.0f transactions per CPU-second\n",
				add * rrc_ab / 1e7, raw * rrc_ab / 1e7, 1e9 / rrc_ab, rrc_ab
		if (t == "stream" && base["stream"] > 0)
			printf "  added per MB: %.0f ns net (%.0f ns raw) = %.2f%% (%.2f%%) of the baseline time per MB, %.0f ns at %.0f Mbit/s\n",
				add, raw, add * base["stream"] / 8e7, raw * base["stream"] / 8e7, 8e9 / base["stream"], base["stream"]
		if (t == "stream" && stc_ab > 0)
			printf "    = %.2f%% (%.2f%%) of its CPU time, %.0f ns at %.0f Mbit per CPU-second\n",
				add * stc_ab / 8e7, raw * stc_ab / 8e7, 8e9 / stc_ab, stc_ab
		print ""
	}
	for (c = 1; c <= 3; c++)
		if (c in worst)
			printf "(%d) slowest program: %s, %.1f ns net per run\n", c, worstname[c], worst[c]
}
